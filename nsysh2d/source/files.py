"""The traces a command was given (expand_inputs: a folder stands for the traces in it), a settings file's check,
and damage in a file as one line of bad input. Which format a trace is: inputs.py; the file's own checks:
file_checks.py."""
from __future__ import annotations

import os
import re
import stat
from contextlib import contextmanager

from ..errors import BadInput, NsysH2DError, first_line
from .inputs import INPUT_SUFFIXES, is_trace_file
from .schema import first_bad_value


def name_order(name: str) -> list:
    """Names in order with their numbers read as numbers: rank-2 before rank-10."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name)]


def expand_inputs(paths: list[str]) -> list[str]:
    """A folder stands for the traces in it (not recursive, by name order, numbers as numbers: one file per rank, as vLLM's
    profiler writes them; a JSON file that names no traceEvents is not one); a folder with none stays as it
    is, so its one error line names it."""
    is_trace = is_trace_file

    out = []
    for path in paths:
        if os.path.isdir(path):
            found = sorted((os.path.join(path, n) for n in os.listdir(path)
                            if n.endswith(INPUT_SUFFIXES) and is_trace(os.path.join(path, n))), key=name_order)
            out.extend(found or [path])
        else:
            out.append(path)
    return out


def check_regular(path, what: str) -> None:
    """A settings file (baseline, pyproject) must be a regular file: reading a FIFO would block forever."""
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
    # DuckDB's message quoting a value that is not UTF-8 fails to decode: that too is the file's damage.
    undecodable = isinstance(e, UnicodeDecodeError)
    if isinstance(e, (MemoryError, KeyboardInterrupt)) or not (undecodable or _DAMAGE.search(str(e))):
        return None
    if undecodable or _WRONG_KIND.search(str(e)):
        where = first_bad_value(path)   # which table: DuckDB's message names only the column (None: not SQLite)
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
    try:
        yield
    except NsysH2DError:
        raise
    except Exception as e:
        bad = damaged_input(path, e, what)
        if bad is None:
            raise
        raise bad from None
