"""Running analyses: many inputs in parallel with progress, each input one job (jobs.Job), mapped by one of the
executors (executors.py: serial, a process pool, or a Dask cluster with --scheduler)."""
from __future__ import annotations

import os
import sys

from ..analyses.options import REPORT_GROUPS
from ..cpus import usable_cpus
from ..errors import BadInput, NsysH2DError
from ..source.files import expand_inputs
from .executors import executor
from .jobs import Job


def analyze_many(paths: list[str], opts, groups=None, jobs: int | None = None, nsys: str | None = None,
                 use_cache: bool = True, progress: bool | None = None, scheduler: str | None = None,
                 analysis: str = "report"):
    """Returns (results in input order, errors as (path, message, exit code)). scheduler: a Dask scheduler
    address or `local` (cluster.py) instead of the local process pool. analysis: a name of analyses/registry.py
    (the Report by default; opts and groups are its options)."""
    paths = expand_inputs(paths)
    groups = REPORT_GROUPS if groups is None else groups
    return run_jobs([Job(p, analysis, opts, tuple(groups or ()), nsys, use_cache) for p in paths], jobs, progress,
                    scheduler)


def run_jobs(todo: list[Job], jobs: int | None = None, progress: bool | None = None, scheduler: str | None = None):
    """Results of these jobs in their order, and errors as (path, message, exit code); jobs: how many run at
    once (default: the CPUs this process may use)."""
    paths = [job.path for job in todo]
    results: dict[int, object] = {}
    errors: list[tuple[str, str, int]] = []
    if jobs is None:
        jobs = usable_cpus()
    jobs = max(1, min(jobs, len(paths)))
    if progress is None:
        progress = sys.stderr.isatty() and len(paths) > 1 and not os.environ.get("NSYSH2D_QUIET")
    bar = task = None
    if progress:
        from rich.console import Console   # lazy: 40 ms; a run without a terminal (CI, piped) never draws a bar
        from rich.progress import (   # lazy: as rich.console
            BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn)

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
        executor(scheduler, jobs).map(todo, done)
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


def compare_sides(traces: list[str]) -> tuple[list[str], int]:
    """The files `compare` reads, and how many ranks each side holds: 1 for trace files; two folders of N traces
    each are two rank sets, rank i (by name order) against rank i. Anything else with a folder is refused."""
    if len(traces) < 2:
        raise BadInput("compare needs two traces (before, after) or more (variants)")
    sides = [expand_inputs([t]) for t in traces]
    if all(len(s) == 1 for s in sides):
        return [s[0] for s in sides], 1
    if len(sides) != 2 or len(sides[0]) != len(sides[1]):
        counts = ", ".join(f"{t}: {len(s)}" for t, s in zip(traces, sides))
        raise BadInput(f"compare takes trace files, or two folders of as many traces each (rank sets, rank i against "
                       f"rank i); got {counts}")
    return sides[0] + sides[1], len(sides[0])
