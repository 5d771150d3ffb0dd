"""Running analyses: many reports in parallel with progress, and the cache of finished reports.

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
import sys

from . import __version__
from .cache import atomic_write, cache_dir, cache_root, check_private, entry_digest, file_key
from .errors import NsysH2DError


# ------------------------------------------------------------------------------------ cache
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


# ------------------------------------------------------------------------------------ batch
def _one(path: str, opts, groups, nsys, use_cache):
    # A cache hit never loads DuckDB or polars: the warm path stays near process start-up time.
    return cached_report(path, opts, groups, use_cache=use_cache, compute=lambda: _compute(path, opts, groups, nsys))


def _compute(path, opts, groups, nsys):
    from .analyses.h2d_blocking import analyze
    from .model import CopyModel

    from .source.files import damage_is_bad_input

    with damage_is_bad_input(path):
        model = CopyModel.open(path, nsys=nsys)
        try:
            return analyze(model, opts, groups)
        finally:
            model.close()


def _in_pool(paths, jobs, done, args) -> None:
    """One task per report on `jobs` spawned processes (not forked: a fork of a process with DuckDB's threads
    running can deadlock). The workers start with SIGINT ignored (inherited across exec): Ctrl-C reaches
    this process alone, which then stops them, instead of each printing a traceback."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from . import cpus

    # Each worker's analysis takes its share of the CPUs, not all of them (cpus.py).
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                               initializer=cpus.share, initargs=(jobs,))
    try:
        try:
            futs = {pool.submit(_one, p, *args): i for i, p in enumerate(paths)}   # starts the workers
        finally:
            signal.signal(signal.SIGINT, previous)
        for f in as_completed(futs):
            done(futs[f], f.result)
    except BaseException:
        for proc in list(getattr(pool, "_processes", {}).values()):   # no waiting for their current reports
            proc.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()


def analyze_many(paths: list[str], opts, groups=None, jobs: int | None = None, nsys: str | None = None,
                 use_cache: bool = True, progress: bool | None = None, scheduler: str | None = None):
    """Returns (Reports in input order, errors as (path, message, exit code)). scheduler: a Dask scheduler
    address or `local` (cluster.py) instead of the local process pool."""
    from .analyses.options import REPORT_GROUPS

    groups = REPORT_GROUPS if groups is None else groups
    results: dict[int, object] = {}
    errors: list[tuple[str, str, int]] = []
    if jobs is None:
        from .cpus import usable_cpus
        jobs = usable_cpus()
    jobs = max(1, min(jobs, len(paths)))
    if progress is None:
        progress = sys.stderr.isatty() and len(paths) > 1
    bar = task = None
    if progress:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(TextColumn("analyzing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                       transient=True, console=Console(stderr=True))
        bar.start()
        task = bar.add_task("reports", total=len(paths))

    def done(i, result):
        try:
            results[i] = result()
        except NsysH2DError as e:
            errors.append((paths[i], str(e), e.exit_code))
        if bar:
            bar.advance(task)

    try:
        if scheduler:
            from .cluster import on_cluster
            on_cluster(paths, scheduler, done, (opts, groups, nsys, use_cache), workers=jobs if jobs > 1 else None)
        elif jobs == 1:
            for i, p in enumerate(paths):
                done(i, lambda p=p: _one(p, opts, groups, nsys, use_cache))
        else:
            _in_pool(paths, jobs, done, (opts, groups, nsys, use_cache))
    finally:
        if bar:
            bar.stop()
    return [results[i] for i in sorted(results)], errors


def analyze_one(path: str, opts, nsys: str | None = None, use_cache: bool = True):
    """One Report; an error is raised as NsysH2DError."""
    return analyze_all([path], opts, nsys, use_cache)[0]


def analyze_all(paths: list[str], opts, nsys: str | None = None, use_cache: bool = True,
                scheduler: str | None = None) -> list:
    """Reports of all paths, in order; errors are raised as one NsysH2DError naming each file."""
    reps, errors = analyze_many(paths, opts, jobs=1 if not scheduler else None, nsys=nsys, use_cache=use_cache,
                                progress=False, scheduler=scheduler)
    if errors:
        raise NsysH2DError("; ".join(msg for _p, msg, _c in errors), max(c for _p, _m, c in errors))
    return reps
