"""Analyze many reports (e.g. one per rank) in parallel, with progress, one result per report."""
from __future__ import annotations

import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed

from .errors import NsysH2DError


def _one(path: str, opts, groups, nsys, use_cache) -> dict:
    from .cache import cached_report

    # A cache hit never loads DuckDB or polars: the warm path stays near process start-up time.
    return cached_report(path, opts, groups, use_cache=use_cache,
                         compute=lambda: _compute(path, opts, groups, nsys))


def _compute(path, opts, groups, nsys) -> dict:
    from .analysis import Analysis

    a = Analysis.open(path, nsys=nsys)
    try:
        return a.report(opts, groups=groups)
    finally:
        a.close()


def run(paths: list[str], opts, groups=("site", "class", "nvtx", "stream"), jobs: int | None = None,
        nsys: str | None = None, use_cache: bool = True, progress: bool | None = None):
    """Returns (reports in input order, errors as (path, message, exit code))."""
    results: dict[int, dict] = {}
    errors: list[tuple[str, str, int]] = []
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(paths)))
    if progress is None:
        progress = sys.stderr.isatty() and len(paths) > 1
    bar = None
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
        if jobs == 1:
            for i, p in enumerate(paths):
                done(i, lambda p=p: _one(p, opts, groups, nsys, use_cache))
        else:
            # spawn, not fork: a forked child of a process with DuckDB's threads running can deadlock.
            with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
                futs = {pool.submit(_one, p, opts, groups, nsys, use_cache): i for i, p in enumerate(paths)}
                for f in as_completed(futs):
                    done(futs[f], f.result)
    finally:
        if bar:
            bar.stop()
    return [results[i] for i in sorted(results)], errors
