"""Cache of finished analysis reports in the user's cache folder.

Keyed by the export's real path, size, mtime, inode and ctime, the nsysh2d version, the SQL shipped
and the options, so a changed export or a new release is never served stale. Written atomically
(temporary file + rename), so concurrent analyses of one file never see half an entry.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil

from . import __version__
from .cachedir import atomic_write, cache_root, file_key


def _sql_digest() -> str:
    from .sql import load, names

    h = hashlib.sha256()
    for n in names():
        h.update(n.encode())
        h.update(load(n).encode())
    return h.hexdigest()[:16]


def entry_path(path: str, opts, groups) -> str:
    salt = json.dumps([__version__, _sql_digest(), vars(opts), list(groups)], sort_keys=True, default=str)
    return str(cache_root() / "reports" / f"{file_key(path, salt)}.json")


def cached_report(path: str, opts, groups, use_cache=True, compute=None) -> dict:
    if not use_cache or path.endswith((".nsys-rep", ".qdrep")) or not os.path.isfile(path):
        return compute()
    entry = entry_path(path, opts, groups)
    try:
        with open(entry) as f:
            rep = json.load(f)
        rep["path"] = path
        return rep
    except (OSError, ValueError):
        pass
    rep = compute()
    try:
        atomic_write(entry, json.dumps(rep, default=str))
    except OSError:
        pass  # an unwritable cache folder only costs speed
    return rep


def clear() -> int:
    root = cache_root()
    n = sum(1 for _ in root.rglob("*") if _.is_file()) if root.exists() else 0
    shutil.rmtree(root, ignore_errors=True)
    return n
