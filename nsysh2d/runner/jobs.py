"""One job: one analysis of one input (a `Job`), from the cache of finished results or computed through the
library's facade (`nsysh2d.open(path)`, analysis.py: one method per analysis). run.py maps jobs over many
inputs (serially or on a process pool, executors.py), cluster.py over a Dask cluster, the nsys recipe over its
own executors: each carries the same Job and calls run_job; none of them imports the others. Every analysis
so gets the cache, -j and --scheduler.

analyses/registry.py names every analysis: how the facade computes it and how its result round-trips JSON (the
cache entry, and what a Dask worker sends back). The cache is keyed by the export's real path, size, mtime, inode and ctime, the nsysh2d version,
the SQL shipped and the job's identity, so a changed export or a new release is never served stale. A damaged
entry is recomputed; the folder, its key and the writes are cache.py's.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

from .. import __version__
from ..analyses.options import Options
from ..analyses.registry import spec
from ..cache import atomic_write, cache_dir, cache_root, check_private, entry_digest, file_key
from ..rules.sites import source_root as this_source_root
from ..source.inputs import input_for
from ..source.sql import load, names


@dataclass(frozen=True)
class Job:
    """One analysis of one input: plain, picklable data, the same in this process, a pool worker, a Dask worker
    and the nsys recipe. Its identity (what the result depends on, and so the cache key): path, analysis, opts,
    groups (the report's groupings; () for the other analyses) and, for a Kineto trace, source_root (where its
    call sites' files are looked for). How it is run (the result does not change): nsys (the binary that
    exports a .nsys-rep) and use_cache. source_root None: the running process's (--source-root, else its
    current folder)."""
    path: str
    analysis: str = "report"
    opts: Options | None = None
    groups: tuple = ()
    nsys: str | None = None
    use_cache: bool = True
    source_root: str | None = None


def _sql_digest() -> str:
    h = hashlib.sha256()
    for n in names():
        h.update(n.encode())
        h.update(load(n).encode())
    return h.hexdigest()[:16]


def entry_path(job: Job) -> str:
    path, opts = job.path, job.opts
    # A Kineto trace's sites are resolved against the source root (sites.resolve): part of its entry's key.
    root = (job.source_root or this_source_root()) if input_for(path).uses_source_root else None
    salt = json.dumps([__version__, _sql_digest(), job.analysis, vars(opts) if opts is not None else None,
                       list(job.groups or ())] + ([root] if root else []), sort_keys=True, default=str)
    return str(cache_root() / "reports" / f"{file_key(path, salt)}.json")   # cache_dir() when written


def compute(job: Job):
    """The job's result, computed by the facade (its method for the job's analysis)."""
    from ..analysis import Analysis   # lazy: the facade loads DuckDB; a cache hit never gets here

    a = Analysis(job.path, nsys=job.nsys, use_cache=job.use_cache)
    try:
        return a.run(job.analysis, job.opts, job.groups)
    finally:
        a.close()


def _set_path(result, path: str):
    if isinstance(result, dict):
        result["path"] = path
    else:
        result.path = path
    return result


def cached(job: Job, compute: Callable):
    """The result of one job: from the cache when an entry of the same shape is there, else computed (and
    stored)."""
    path, codec = job.path, spec(job.analysis)
    if not job.use_cache or not input_for(path).cacheable or not os.path.isfile(path):
        return compute()
    check_private(cache_root())
    entry = entry_path(job)
    try:
        with open(entry, encoding="utf-8") as f:
            stored = json.load(f)
        # Served only if this cache wrote it: an entry edited, truncated, of another shape or made without the
        # cache's key is recomputed.
        if not hmac.compare_digest(str(stored["hmac"]), entry_digest(stored["report"])):
            raise ValueError("cache entry altered")
        return _set_path(codec.from_json(stored["report"]), path)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    result = compute()
    try:
        cache_dir("reports")
        payload = json.loads(json.dumps(codec.to_json(result), default=str))
        atomic_write(entry, json.dumps({"hmac": entry_digest(payload), "report": payload}))
    except OSError:
        pass  # an unwritable cache folder only costs speed
    return result


@contextmanager
def _source_root(root: str | None):
    """The job's source root for its run (a Dask worker's folder is not the client's); put back after."""
    before = os.environ.get("NSYSH2D_SOURCE_ROOT")
    if root:
        os.environ["NSYSH2D_SOURCE_ROOT"] = root
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("NSYSH2D_SOURCE_ROOT", None)
        else:
            os.environ["NSYSH2D_SOURCE_ROOT"] = before


def run_job(job: Job):
    """One job's result (every executor and the nsys recipe call this). A cache hit never loads DuckDB or
    polars: the warm path stays near process start-up time."""
    spec(job.analysis)   # an unknown name is refused before anything is read
    with _source_root(job.source_root):
        return cached(job, lambda: compute(job))
