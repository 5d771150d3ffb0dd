"""The user's cache folder for nsysh2d (exports of .nsys-rep files, analysis caches), and atomic writes."""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def cache_root() -> Path:
    base = os.environ.get("NSYSH2D_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "nsysh2d")
    return Path(base)


def file_key(path: str, salt: str = "") -> str:
    """A key that changes whenever the file does: real path, size, mtime, inode, ctime."""
    st = os.stat(path)
    raw = f"{os.path.realpath(path)}|{st.st_size}|{st.st_mtime_ns}|{st.st_ino}|{st.st_ctime_ns}|{salt}"
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def atomic_write(path: str | os.PathLike, data: bytes | str) -> None:
    """Write to a temporary file in the same folder, then rename: readers never see half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
