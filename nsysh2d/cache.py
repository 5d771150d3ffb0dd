"""The cache folder and what is written in it, and the atomic writes of every output: a leaf module (it
imports nothing of the package but errors), so the input adapters, the presentation layer and the job
runner (run.py) can all use it without importing each other.

The folder is this user's alone (created 0700, refused otherwise); what nsysh2d wrote there carries an HMAC
under the folder's own key (report entries) or a seal of the file's identity (exports, private copies), so
nothing planted or changed there is served (docs/security.md).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

from .errors import EXIT_OUTPUT_UNWRITABLE, BadInput, NsysH2DError


def cache_root() -> Path:
    base = os.environ.get("NSYSH2D_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "nsysh2d")
    return Path(base)


MARKER = ".nsysh2d-cache"           # written into the cache folder: cache-clear removes only marked folders
CACHE_PARTS = ("reports", "exports", "spill", "copies", "nsys")


def check_private(root: Path) -> None:
    """The cache folder must be this user's alone: an entry, export or copy another user could plant there
    would be served as this user's results, and cache-clear would delete what another user keeps there
    (docs/security.md). So it is refused, before anything in it is read, written or deleted, when it is a
    symbolic link (whose target anyone who could plant it chooses), not a folder, owned by another user, or
    writable by others (sticky or not: they could still create the names nsysh2d reads). Created 0700 by
    cache_dir; its parts are held to the same."""
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        return
    euid = os.geteuid() if hasattr(os, "geteuid") else st.st_uid
    if stat.S_ISLNK(st.st_mode):
        raise BadInput(f"{root}: the cache folder is a symbolic link; refusing to use it (set NSYSH2D_CACHE_DIR "
                       "to the folder itself, or --no-cache)")
    if not stat.S_ISDIR(st.st_mode):
        raise BadInput(f"{root}: the cache folder is not a folder (set NSYSH2D_CACHE_DIR, or --no-cache)")
    if st.st_uid != euid or st.st_mode & 0o022:
        why = "owned by another user" if st.st_uid != euid else "writable by other users"
        raise BadInput(f"{root}: the cache folder is {why}; refusing to use it (make it yours alone, chmod 700, "
                       "or set NSYSH2D_CACHE_DIR to a private folder, or --no-cache)")


def cache_dir(part: str) -> Path:
    """A folder of the cache (reports, exports, spill, copies, nsys), created with the marker that says nsysh2d owns it."""
    root = cache_root()
    check_private(root)   # a link or another user's folder is refused before anything is created in it
    root.parent.mkdir(parents=True, exist_ok=True)
    root.mkdir(mode=0o700, exist_ok=True)
    check_private(root)
    (root / part).mkdir(mode=0o700, exist_ok=True)
    check_private(root / part)
    marker = root / MARKER
    if not marker.exists():
        marker.write_text("nsysh2d cache folder: 'nsysh2d cache-clear' deletes what it wrote here\n")
    return root / part


def file_key(path: str, salt: str = "") -> str:
    """A key that changes whenever the file does: real path, size, mtime, inode, ctime; and whenever a -journal
    or -wal beside it does (SQLite reads the file with them: a -wal that appears later changes what it holds)."""
    st = os.stat(path)
    real = os.path.realpath(path)
    raw = f"{real}|{st.st_size}|{st.st_mtime_ns}|{st.st_ino}|{st.st_ctime_ns}|{salt}"
    for side in ("-journal", "-wal"):
        try:
            s = os.stat(real + side)   # beside the file a link names, as SQLite looks; stat only, never opened
        except OSError:
            continue
        raw += f"|{side}:{s.st_size}:{s.st_mtime_ns}:{s.st_ino}:{s.st_ctime_ns}"
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def atomic_write(path: str | os.PathLike, data: bytes | str) -> None:
    """Write to a temporary file in the same folder, then rename: readers never see half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp makes the file 0600; the user's file gets the mode any new file of theirs gets (or keeps its own).
        try:
            mode = path.stat().st_mode & 0o7777
        except OSError:
            mode = 0o666 & ~_umask()
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def append_output(path: str, text: str) -> None:
    """Append all of `text` or nothing: a failed write (full disk) is cut back to the file's old end. Only
    to a regular file that this user owns (or a new one), never through a symbolic link: on a shared
    machine a link planted at the path would send the text into another file (docs/security.md)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0), 0o666)   # a FIFO: an error, not a wait
    except OSError as e:
        if os.path.islink(path):
            raise NsysH2DError(f"{path}: is a symbolic link; refusing to append through it (name the file "
                               "itself)", EXIT_OUTPUT_UNWRITABLE) from None
        raise NsysH2DError(f"{path}: cannot write ({e.strerror})", EXIT_OUTPUT_UNWRITABLE) from None
    st = os.fstat(fd)
    euid = os.geteuid() if hasattr(os, "geteuid") else st.st_uid
    if not stat.S_ISREG(st.st_mode) or (st.st_uid != euid and euid != 0):
        os.close(fd)
        what = "not a regular file" if not stat.S_ISREG(st.st_mode) else "owned by another user"
        raise NsysH2DError(f"{path}: {what}; refusing to append to it", EXIT_OUTPUT_UNWRITABLE)
    try:
        # Unbuffered: a buffer left after a failed write would be flushed again on close, past the cut.
        start = os.lseek(fd, 0, os.SEEK_END)
        view = memoryview(text.encode())
        try:
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except OSError:
            os.ftruncate(fd, start)
            raise
    except OSError as e:
        raise NsysH2DError(f"{path}: cannot write ({e.strerror})", EXIT_OUTPUT_UNWRITABLE) from None
    finally:
        os.close(fd)


def write_output(path: str, text: str) -> None:
    try:
        atomic_write(path, text)
    except OSError as e:
        raise NsysH2DError(f"{path}: cannot write ({e.strerror})", EXIT_OUTPUT_UNWRITABLE) from None


def entry_digest(payload) -> str:
    """HMAC-SHA256 of an entry under the cache's own key (a plain digest of itself anyone could recompute)."""
    return hmac.new(cache_key(), json.dumps(payload, sort_keys=True).encode(), hashlib.sha256).hexdigest()


def _identity(path: Path) -> bytes:
    st = os.stat(path)
    return f"{path.name}|{st.st_size}|{st.st_mtime_ns}|{st.st_ino}".encode()


def seal(path: str | os.PathLike) -> None:
    """Mark a file the cache wrote (an export, a private copy) as its own: an HMAC of the file's name, size,
    mtime and inode under the cache's key, beside it. Hashing the content would cost what the cache saves."""
    path = Path(path)
    atomic_write(f"{path}.hmac", hmac.new(cache_key(), _identity(path), hashlib.sha256).hexdigest())


def sealed(path: str | os.PathLike) -> bool:
    """Whether this cache wrote the file as it is now (seal): one planted or replaced there is not used."""
    path = Path(path)
    try:
        mark = Path(f"{path}.hmac").read_text()
        return hmac.compare_digest(mark, hmac.new(cache_key(), _identity(path), hashlib.sha256).hexdigest())
    except (OSError, UnicodeDecodeError):
        return False


def cache_key() -> bytes:
    """The cache's secret (32 random bytes in a 0600 file, made once; readers never see it half written)."""
    path = cache_root() / ".key"
    try:
        key = path.read_bytes()
        if len(key) == 32:
            return key
    except FileNotFoundError:
        pass
    cache_dir("reports")
    fd, tmp = tempfile.mkstemp(dir=cache_root(), prefix=".key.")   # 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(32))
        try:
            os.link(tmp, path)   # the first process's key wins; the others read it
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp)
    key = path.read_bytes()
    if len(key) != 32:
        raise BadInput(f"{path}: not a cache key nsysh2d wrote (32 bytes); remove it or run 'nsysh2d cache-clear'")
    return key


def clear_cache() -> int:
    """Deletes what nsysh2d wrote (its folders, then the marker); a folder without the marker is not ours,
    nor one check_private refuses (a link planted as the cache folder, another user's folder). Links inside
    are removed, never followed."""
    root = cache_root()
    check_private(root)
    if not root.exists():
        return 0
    try:
        marked = stat.S_ISREG(os.lstat(root / MARKER).st_mode)
    except OSError:
        marked = False
    if not marked:
        raise BadInput(f"{root}: not an nsysh2d cache folder (no {MARKER} marker); nothing deleted")
    n = 0
    for part in CACHE_PARTS:
        folder = root / part
        if folder.is_symlink():
            folder.unlink()
        elif folder.is_dir():
            n += sum(len(files) for _, _, files in os.walk(folder))   # os.walk follows no link
            shutil.rmtree(folder, ignore_errors=True)   # removes links inside, not their targets
    (root / ".key").unlink(missing_ok=True)
    (root / MARKER).unlink()
    try:
        root.rmdir()   # only when nothing else is left in it
    except OSError:
        pass
    return n
