"""Where the jobs of run.analyze_many run: one strategy, `map(jobs, done)`, three ways (as nsys's own recipe
runner maps one function over its files, concurrently or on Dask): Serial in this process, Processes on a local
pool, Dask (cluster.py) on a cluster. Each carries the jobs (jobs.Job) unchanged to jobs.run_job and calls
done(i, result) as job i finishes, in any order; result() returns the job's result or raises its NsysH2DError."""
from __future__ import annotations

import multiprocessing
import signal
from concurrent.futures import ProcessPoolExecutor, as_completed

from .. import cpus
from .cluster import Dask
from .jobs import Job, run_job


class Serial:
    """One job after another in this process (one report, or -j 1)."""

    def map(self, jobs: list[Job], done) -> None:
        for i, job in enumerate(jobs):
            done(i, lambda job=job: run_job(job))


class Processes:
    """One task per report on `jobs` spawned processes (not forked: a fork of a process with DuckDB's threads
    running can deadlock). The workers start with SIGINT ignored (inherited across exec): Ctrl-C reaches
    this process alone, which then stops them, instead of each printing a traceback."""

    def __init__(self, jobs: int):
        self.jobs = jobs

    def map(self, jobs: list[Job], done) -> None:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        # Each worker's analysis takes its share of the CPUs, not all of them (cpus.py).
        pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=cpus.share, initargs=(self.jobs,))
        try:
            try:
                futs = {pool.submit(run_job, job): i for i, job in enumerate(jobs)}   # starts the workers
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


def executor(scheduler: str | None, jobs: int):
    """The strategy for these settings: a Dask scheduler address (or `local`), else a pool for jobs > 1."""
    if scheduler:
        return Dask(scheduler, workers=jobs if jobs > 1 else None)
    return Serial() if jobs == 1 else Processes(jobs)
