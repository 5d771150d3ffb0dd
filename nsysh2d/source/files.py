"""Is this file an nsys SQLite export we can read? Says what it is instead when it is not."""
from __future__ import annotations

import os
import re
import stat
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from ..errors import BadInput

SQLITE_MAGIC = b"SQLite format 3\x00"
COMPRESSED_MAGIC = {b"\x1f\x8b": "gzip", b"\xfd7zXZ": "xz", b"BZh": "bzip2", b"\x28\xb5\x2f\xfd": "zstd",
                    b"PK\x03\x04": "zip"}


def read_only_uri(path: str) -> str:
    """The file as a SQLite URI opened read-only: SQLite writes nothing to it or beside it (no journal, no -wal).
    Every reader of the user's file opens it this way (the standard library's sqlite3, the compiled reader, ADBC)."""
    return f"file:{quote(os.path.abspath(path))}?mode=ro"


@contextmanager
def read_only(path: str):
    """The standard library's sqlite3 on the file, read-only (read_only_uri)."""
    import sqlite3

    con = sqlite3.connect(read_only_uri(path), uri=True)
    try:
        yield con
    finally:
        con.close()


def check_input(path: str) -> os.stat_result:
    """A trace must be a regular file before anything opens it (a .nsys-rep too, before nsys reads it): a
    FIFO would block the first read forever, a device would never end, opening some devices acts."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except OSError as e:
        raise BadInput(f"{path}: cannot read ({e.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        raise BadInput(f"{path}: is a directory, not a trace (analyze and gate read the traces in a folder: "
                       "*.sqlite, *.nsys-rep, *.json, *.json.gz)")
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(f"{path}: not a regular file (a pipe or device?); give the export file itself")
    return st


def check_file(path: str) -> Path:
    """Reject what is not a readable SQLite file, with a message saying what it is instead."""
    p = Path(path)
    st = check_input(path)
    if st.st_size == 0:
        raise BadInput(f"{path}: empty file (an interrupted nsys export?)")
    try:
        with open(p, "rb") as f:
            head = f.read(100)
    except OSError as e:
        raise BadInput(f"{path}: cannot read ({e.strerror})") from None
    if head.startswith(SQLITE_MAGIC):
        if len(head) < 100 or st.st_size < 512:
            raise BadInput(f"{path}: truncated SQLite file ({st.st_size} bytes)")
        page = int.from_bytes(head[16:18], "big")
        page = 65536 if page == 1 else page   # SQLite stores a 64 KiB page size as 1
        pages = int.from_bytes(head[28:32], "big")
        if pages and st.st_size < page * pages:
            raise BadInput(f"{path}: truncated SQLite file ({st.st_size} of {page * pages} bytes; "
                           "an interrupted nsys export?)")
        return p
    for magic, kind in COMPRESSED_MAGIC.items():
        if head.startswith(magic):
            raise BadInput(f"{path}: {kind}-compressed file; decompress it first")
    if head[:4] in (b"\x00\x00\x00\x00",) or p.suffix in (".nsys-rep", ".qdrep", ".qdstrm"):
        raise BadInput(f"{path}: not a SQLite export (an nsys report? export it with "
                       "'nsys export --type sqlite' or pass it as .nsys-rep)")
    raise BadInput(f"{path}: not a SQLite file")


INPUT_SUFFIXES = (".sqlite", ".nsys-rep", ".qdrep", ".json", ".json.gz")


def name_order(name: str) -> list:
    """Names in order with their numbers read as numbers: rank-2 before rank-10."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name)]


def expand_inputs(paths: list[str]) -> list[str]:
    """A folder stands for the traces in it (not recursive, by name order, numbers as numbers: one file per rank, as vLLM's
    profiler writes them; a JSON file that names no traceEvents is not one); a folder with none stays as it
    is, so its one error line names it."""
    from .kineto_json import names_trace_events

    def is_trace(file: str) -> bool:
        return os.path.isfile(file) and (not file.endswith((".json", ".json.gz")) or names_trace_events(file))

    out = []
    for path in paths:
        if os.path.isdir(path):
            found = sorted((os.path.join(path, n) for n in os.listdir(path)
                            if n.endswith(INPUT_SUFFIXES) and is_trace(os.path.join(path, n))), key=name_order)
            out.extend(found or [path])
        else:
            out.append(path)
    return out


def is_sqlite(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def check_regular(path, what: str) -> None:
    """A settings file (baseline, pyproject) must be a regular file: reading a FIFO would block forever."""
    import os

    try:
        st = os.stat(path)
    except OSError:
        return  # the caller's read reports it
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(f"{path}: {what} is not a regular file (a pipe or device?)")


# What SQLite and DuckDB say when the file, not nsysh2d, is at fault: a damaged page, values of the wrong type.
_DAMAGE = re.compile(r"malformed|disk image|not a database|file is encrypted|corrupt|Could not convert|"
                     r"Conversion Error|Invalid unicode|invalid UTF-8|Mismatch Type|Out of Range", re.I)


_OVERFLOW = re.compile(r"out of range for the destination type INT64|Overflow in (addition|subtraction|multipl)", re.I)
_WRONG_KIND = re.compile(r"Mismatch Type|Could not convert|Conversion Error|Invalid unicode|invalid UTF-8", re.I)


def damaged_input(path: str, e: Exception, what: str | None = None):
    """A BadInput naming the file (and `what` of it, when the caller knows) when `e` is damage in it (see
    _DAMAGE), else None (a bug: exit 70)."""
    from ..errors import BadInput, first_line

    # DuckDB's message quoting a value that is not UTF-8 fails to decode: that too is the file's damage.
    undecodable = isinstance(e, UnicodeDecodeError)
    if isinstance(e, (MemoryError, KeyboardInterrupt)) or not (undecodable or _DAMAGE.search(str(e))):
        return None
    if undecodable or _WRONG_KIND.search(str(e)):
        from .schema import first_bad_value   # which table: DuckDB's message names only the column
        where = first_bad_value(path) if is_sqlite(path) else None
        if where:
            return BadInput(f"{path}: {where} (damaged or not as nsys writes it)")
    if _OVERFLOW.search(str(e)):   # times or sizes just below 2^62/2^63: each one fits, their sums do not
        return BadInput(f"{path}: its times or sizes add up beyond 64-bit integers (values near 2^62 ns or 2^63: "
                        "damaged or not as nsys writes it; not judged)")
    part = f"{what} " if what else ""
    why = "a value that is not valid UTF-8 (invalid unicode)" if undecodable else first_line(e, 200)
    return BadInput(f"{path}: {part}damaged or not as nsys writes it ({why})")


@contextmanager
def damage_is_bad_input(path: str, what: str | None = None):
    """Errors that are damage in the user's file become one-line bad input naming it; others pass."""
    from ..errors import NsysH2DError

    try:
        yield
    except NsysH2DError:
        raise
    except Exception as e:
        bad = damaged_input(path, e, what)
        if bad is None:
            raise
        raise bad from None
