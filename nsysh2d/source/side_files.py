"""The side files of an SQLite export (a -journal or -wal a killed writer left): the file is read from a
private copy with them applied, never in place, and SQLite is never let act on them beyond that copy's own
folder (docs/security.md, "Side files, links and the cache").

Both side files belong to whoever made the trace. What SQLite would do with them on a writable connection,
and what is done instead:
- a hot rollback journal is rolled back into the database; when its last 8 bytes are the journal magic it
  names a "super-journal" (a multi-database commit), and SQLite then reads the file of that name (any path,
  relative to the working folder) as a list of journals and DELETES it. nsys writes one database and never
  leaves such a journal: one is refused, since whether its transaction must be undone depends on a file
  outside the trace. A journal whose first byte is 0 is not hot (SQLite skips it): it is not copied.
- a -wal is replayed into the database; it names no other file. It is copied as it is.
- either side file that is not a regular file (a FIFO would block the read, a device would never end) is
  refused before it is opened; a link to a regular file is read as that file. What is copied is at most the
  size each file had when it was opened (a file growing meanwhile cannot make the copy grow).
"""
from __future__ import annotations

# SQL in Python: the PRAGMA that recovers the private copy with its side file, and a count that checks it opens.

import os
import shutil
import sqlite3
import stat
import tempfile

from ..cache import cache_dir, file_key, seal, sealed
from ..errors import BadInput

SIDES = {"-journal": "rollback journal", "-wal": "write-ahead log (-wal)"}
JOURNAL_MAGIC = bytes.fromhex("d9d505f920a163d7")   # starts every journal header, ends a super-journal record
CHUNK = 1 << 20


def needs_private_copy(path: str) -> str | None:
    """Why reading the file in place could write beside it, block or fail, or None. A WAL-mode file needs a
    -shm next to it (created even by readers; impossible on a read-only mount; a killed writer's left-over
    one can crash a reader with SIGBUS); SQLite opens any -journal or -wal beside the file by name (a hot
    journal must be rolled back before the file is consistent; a FIFO there would block the reader). Beside
    the file itself: SQLite resolves a link to the database before it names its side files."""
    path = os.path.realpath(path)
    with open(path, "rb") as f:
        head = f.read(20)
    if os.path.lexists(path + "-journal"):
        return "has a rollback journal beside it (a writer was interrupted?)"
    if os.path.lexists(path + "-wal"):
        return "has a write-ahead log (-wal) beside it"
    if len(head) >= 20 and (head[18] == 2 or head[19] == 2):
        return "is in WAL mode"
    return None


def open_regular(path: str, what: str) -> tuple[int, os.stat_result] | None:
    """(descriptor, stat) of a regular file, or None when there is none (a dangling link too). Anything else
    is refused in one line before it is opened (opening a device can act; a FIFO blocks), and checked again
    on the descriptor (it may have been swapped meanwhile); the open never waits."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise BadInput(f"{path}: the {what} is not a regular file (a pipe, device, folder or a link to one); "
                           "refusing to read the trace with it (move it away to read the file alone)")
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        return None
    except OSError as e:
        raise BadInput(f"{path}: cannot read the {what} ({e.strerror})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise BadInput(f"{path}: the {what} is not a regular file; refusing to read the trace with it")
    return fd, st


def copy_bounded(fd: int, size: int, dest: str) -> int:
    """Copy at most `size` bytes from `fd` into a new file `dest` (never an existing one, never through a
    link); closes `fd`. Returns the bytes copied (fewer when the file shrank meanwhile)."""
    done = 0
    try:
        out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except BaseException:
        os.close(fd)
        raise
    try:
        while done < size:
            block = os.read(fd, min(CHUNK, size - done))
            if not block:
                break
            view = memoryview(block)
            while view:
                view = view[os.write(out, view):]
            done += len(block)
    finally:
        os.close(out)
        os.close(fd)
    return done


def check_journal(copy: str, side: str) -> bool:
    """Whether SQLite would roll the journal (our copy of it) back: False when it is not hot (empty, or its
    first byte 0). A journal that names a super-journal is refused (module docstring)."""
    size = os.path.getsize(copy)
    with open(copy, "rb") as f:
        first = f.read(1)
        f.seek(max(0, size - 8))
        tail = f.read(8)
    if not first or first == b"\x00":
        return False
    if size >= 16 and tail == JOURNAL_MAGIC:
        raise BadInput(f"{side}: the rollback journal names a super-journal, another file SQLite would delete "
                       "after rolling it back; refusing to roll it back (nsys never writes one; move the "
                       "-journal away to read the file as it is on disk)")
    return True


def private_copy(path: str, keep: bool = True) -> str:
    """A consistent copy of the file (with its -wal or -journal applied), never written beside the original:
    in the cache (sealed, reused while the files are unchanged), or with keep=False (--no-cache) in a new
    private folder of its own, which the caller removes (the returned file's folder) when done."""
    path = os.path.realpath(path)   # the side files SQLite would read are beside the file a link names
    opened = {}
    try:
        for s, what in SIDES.items():
            got = open_regular(path + s, what)
            if got:
                opened[s] = got
        main = open_regular(path, "trace")
        if main is None:
            raise BadInput(f"{path}: no such file")
        opened[""] = main
        salt = "|".join(f"{s}:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}" for s, (_, st) in opened.items() if s)
        if keep:
            folder = cache_dir("copies")
            target = folder / f"{file_key(path, salt)}.sqlite"
            if target.exists() and sealed(target):   # one this cache made; another is made again
                return str(target)
            tmpdir = tempfile.mkdtemp(prefix="copy-", dir=folder)
        else:
            tmpdir = tempfile.mkdtemp(prefix="nsysh2d-copy-")
        tmp = os.path.join(tmpdir, "db.sqlite")
        try:
            for s in list(opened):
                fd, st = opened.pop(s)
                copy_bounded(fd, st.st_size, tmp + s)
            if os.path.exists(tmp + "-journal") and not check_journal(tmp + "-journal", path + "-journal"):
                os.unlink(tmp + "-journal")
            _recover(path, tmp)
            if not keep:
                return tmp
            os.replace(tmp, target)
            seal(target)
            return str(target)
        except BaseException:
            if not keep:
                shutil.rmtree(tmpdir, ignore_errors=True)
            raise
        finally:
            if keep:
                shutil.rmtree(tmpdir, ignore_errors=True)
    finally:
        for fd, _ in opened.values():
            os.close(fd)


def _recover(path: str, tmp: str) -> None:
    """SQLite replays the WAL or rolls the journal back into the copy, inside its private folder."""
    try:
        con = sqlite3.connect(tmp)
        try:
            con.execute("PRAGMA journal_mode=DELETE")
            con.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            con.close()
    except sqlite3.Error as e:
        raise BadInput(f"{path}: cannot recover it with its side files ({e})") from None
