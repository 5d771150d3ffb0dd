"""The user's file before anything reads it: a regular file (check_input), a readable SQLite file or else what it is
(check_file), and read-only access to it (read_only). Which format a file is is decided in inputs.py, not here."""
from __future__ import annotations

import os
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
    import sqlite3   # lazy: most runs never open the file through the standard library

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


def check_file(path: str, named_report: bool = False) -> Path:
    """Reject what is not a readable SQLite file, with a message saying what it is instead. named_report: the
    file's name says it is an nsys report (inputs.py decides that), which nsys must export first."""
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
    if head[:4] in (b"\x00\x00\x00\x00",) or named_report:
        raise BadInput(f"{path}: not a SQLite export (an nsys report? export it with "
                       "'nsys export --type sqlite' or pass it as .nsys-rep)")
    raise BadInput(f"{path}: not a SQLite file")


def is_sqlite(path: str) -> bool:
    """Does the file start as SQLite does? A low-level sniffer: only inputs.py asks it (the format is decided there)."""
    try:
        with open(path, "rb") as f:
            return f.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False
