"""Running analyses: many reports in parallel with progress (a process pool, or a Dask cluster with
--scheduler), each report a job of jobs.py."""
from __future__ import annotations

import os
import sys

from .errors import NsysH2DError
from .jobs import report_job


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
            futs = {pool.submit(report_job, p, *args): i for i, p in enumerate(paths)}   # starts the workers
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
                 use_cache: bool = True, progress: bool | None = None, scheduler: str | None = None,
                 analysis: str = "report"):
    """Returns (results in input order, errors as (path, message, exit code)). scheduler: a Dask scheduler
    address or `local` (cluster.py) instead of the local process pool. analysis: an entry of jobs.ANALYSES
    (the Report by default; opts and groups are its options)."""
    from .analyses.options import REPORT_GROUPS
    from .source.files import expand_inputs

    paths = expand_inputs(paths)
    groups = REPORT_GROUPS if groups is None else groups
    results: dict[int, object] = {}
    errors: list[tuple[str, str, int]] = []
    if jobs is None:
        from .cpus import usable_cpus
        jobs = usable_cpus()
    jobs = max(1, min(jobs, len(paths)))
    if progress is None:
        progress = sys.stderr.isatty() and len(paths) > 1 and not os.environ.get("NSYSH2D_QUIET")
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
            on_cluster(paths, scheduler, done, (opts, groups, nsys, use_cache, analysis),
                       workers=jobs if jobs > 1 else None)
        elif jobs == 1:
            for i, p in enumerate(paths):
                done(i, lambda p=p: report_job(p, opts, groups, nsys, use_cache, analysis))
        else:
            _in_pool(paths, jobs, done, (opts, groups, nsys, use_cache, analysis))
    finally:
        if bar:
            bar.stop()
    return [results[i] for i in sorted(results)], errors


def analyze_one(path: str, opts, nsys: str | None = None, use_cache: bool = True, analysis: str = "report"):
    """One result (a Report by default); an error is raised as NsysH2DError."""
    return analyze_all([path], opts, nsys, use_cache, analysis=analysis)[0]


def analyze_all(paths: list[str], opts, nsys: str | None = None, use_cache: bool = True,
                scheduler: str | None = None, analysis: str = "report") -> list:
    """Results of all paths, in order; errors are raised as one NsysH2DError naming each file."""
    reps, errors = analyze_many(paths, opts, () if analysis != "report" else None,
                                jobs=1 if not scheduler else None, nsys=nsys, use_cache=use_cache,
                                progress=False, scheduler=scheduler, analysis=analysis)
    if errors:
        raise NsysH2DError("; ".join(msg for _p, msg, _c in errors), max(c for _p, _m, c in errors))
    return reps
