"""One job: the Report of one input, from the cache of finished reports or computed. run.py maps it over
many inputs (process pool), cluster.py over a Dask cluster, the nsys recipe over its own executors; none
of them imports the others.

The cache is keyed by the export's real path, size, mtime, inode and ctime, the nsysh2d version, the
SQL shipped and the options, so a changed export or a new release is never served stale. Entries are
Report.to_json() documents, read back through Report.from_json (a damaged entry is recomputed); the
folder, its key and the writes are cache.py's.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os

from . import __version__
from .cache import atomic_write, cache_dir, cache_root, check_private, entry_digest, file_key


def _sql_digest() -> str:
    from .source.sql import load, names

    h = hashlib.sha256()
    for n in names():
        h.update(n.encode())
        h.update(load(n).encode())
    return h.hexdigest()[:16]


def entry_path(path: str, opts, groups) -> str:
    salt = json.dumps([__version__, _sql_digest(), vars(opts), list(groups)], sort_keys=True, default=str)
    return str(cache_root() / "reports" / f"{file_key(path, salt)}.json")   # cache_dir() when written


def cached_report(path: str, opts, groups, use_cache=True, compute=None):
    """The Report of one export: from the cache when an entry of the same shape is there, else computed
    (and stored)."""
    from .analyses.h2d_blocking import Report

    if not use_cache or path.endswith((".nsys-rep", ".qdrep")) or not os.path.isfile(path):
        return compute()
    check_private(cache_root())
    entry = entry_path(path, opts, groups)
    try:
        with open(entry, encoding="utf-8") as f:
            stored = json.load(f)
        # Served only if this cache wrote it: an entry edited, truncated, of another shape or made without the
        # cache's key is recomputed.
        if not hmac.compare_digest(str(stored["hmac"]), entry_digest(stored["report"])):
            raise ValueError("cache entry altered")
        rep = Report.from_json(stored["report"])
        rep.path = path
        return rep
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    rep = compute()
    try:
        cache_dir("reports")
        payload = json.loads(json.dumps(rep.to_json(), default=str))
        atomic_write(entry, json.dumps({"hmac": entry_digest(payload), "report": payload}))
    except OSError:
        pass  # an unwritable cache folder only costs speed
    return rep


def report_job(path: str, opts, groups, nsys, use_cache):
    # A cache hit never loads DuckDB or polars: the warm path stays near process start-up time.
    return cached_report(path, opts, groups, use_cache=use_cache,
                         compute=lambda: _compute(path, opts, groups, nsys, use_cache))


def _compute(path, opts, groups, nsys, use_cache=True):
    from .analyses.h2d_blocking import analyze
    from .model import CopyModel

    from .source.files import damage_is_bad_input

    with damage_is_bad_input(path):
        model = CopyModel.open(path, nsys=nsys, use_cache=use_cache)
        try:
            return analyze(model, opts, groups)
        finally:
            model.close()
