"""Many reports on a Dask cluster (`--scheduler ADDRESS`, `local` for a LocalCluster): one task per report,
the reduction on the client (run.analyze_many). Workers import this installed module and read the reports
by path (shared storage): a report never travels as bytes, only its result (Report.to_json) comes back.

A worker that dies is Dask's to retry (its tasks go to another worker, up to the scheduler's
`allowed-failures`); a report whose task still fails is an `errors` entry; with no worker left for
NO_WORKER_S seconds the run stops with an error instead of waiting forever.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import replace

from ..cpus import MAX_THREADS, analysis_threads, usable_cpus
from ..errors import EXIT_BAD_INPUT, EXIT_INTERNAL, NsysH2DError
from ..rules.sites import source_root
from ..analyses.registry import spec
from .jobs import Job, run_job

NO_WORKER_S = float(os.environ.get("NSYSH2D_NO_WORKER_TIMEOUT", "60"))


def task(job: Job) -> str:
    """Runs on a worker: the job's result as JSON (analyses/registry.py), or its error (an NsysH2DError is a result, not a
    failure), as JSON text: what comes back is plain data, read by json on the client. The job carries the
    client's source root (where Kineto call sites' files are looked for, sites.resolve), so a worker names them
    as a local run does."""
    try:
        out = {"report": spec(job.analysis).to_json(run_job(job))}
    except NsysH2DError as e:
        out = {"error": str(e), "exit_code": e.exit_code}
    return json.dumps(out, default=str)


def _distributed():
    try:
        import distributed   # lazy: an optional dependency (the [dask] extra), needed only with --scheduler
    except ImportError:
        raise NsysH2DError("--scheduler needs Dask: pip install 'nsysh2d[dask]'", EXIT_BAD_INPUT) from None
    return distributed


def connect(scheduler: str, workers: int | None = None):
    """(client, cluster or None) for an address (tcp://host:8786, host:8786) or `local`."""
    distributed = _distributed()
    if scheduler == "local":
        n = workers or min(usable_cpus(), MAX_THREADS)
        # Each worker process's analysis takes its share of this machine's CPUs (cpus.py), not all of them.
        env = {"NSYSH2D_THREADS": str(analysis_threads() if os.environ.get("NSYSH2D_THREADS")
                                      else max(1, usable_cpus() // n))}
        # The workers' scratch folder is a new private one, removed with the cluster (Dask's default is
        # $TMPDIR/dask-scratch-space, left behind and shared by every user of the machine).
        scratch = tempfile.mkdtemp(prefix="nsysh2d-dask-")
        import dask   # lazy: installed with distributed (above)
        dask.config.set({"temporary-directory": scratch})
        cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, env=env,
                                           dashboard_address=None, silence_logs=logging.ERROR, local_directory=scratch)
        cluster.nsysh2d_scratch = scratch
        return distributed.Client(cluster), cluster
    try:
        client = distributed.Client(scheduler, timeout="10s")
    except (OSError, TimeoutError, ValueError) as e:
        raise NsysH2DError(f"cannot reach the Dask scheduler at {scheduler!r} ({str(e).splitlines()[0]})",
                           EXIT_BAD_INPUT) from None
    return client, None


class Dask:
    """The executors.py strategy on a Dask cluster: maps `task` over the jobs; done(i, result) gets each as it
    finishes (result() returns the job's result or raises NsysH2DError)."""

    def __init__(self, scheduler: str, workers: int | None = None):
        self.scheduler, self.workers = scheduler, workers

    def map(self, jobs: list[Job], done) -> None:
        paths = [job.path for job in jobs]
        distributed = _distributed()
        client, cluster = connect(self.scheduler, self.workers)
        try:
            # The workers look for Kineto call sites' files under this process's source root, not their own.
            futures = client.map(task, [replace(job, source_root=job.source_root or source_root()) for job in jobs],
                                 pure=False, retries=2)
            index = {f.key: i for i, f in enumerate(futures)}
            pending, idle_since = set(futures), None
            while pending:
                try:
                    finished, pending = distributed.wait(list(pending), timeout=2, return_when="FIRST_COMPLETED")
                except TimeoutError:
                    finished = set()
                for f in finished:
                    done(index[f.key], lambda f=f: _result(f, jobs[index[f.key]]))
                if finished or client.scheduler_info().get("workers"):
                    idle_since = None
                elif idle_since is None:
                    idle_since = time.monotonic()
                elif time.monotonic() - idle_since > NO_WORKER_S:
                    for f in pending:
                        done(index[f.key], lambda f=f: _no_worker(paths[index[f.key]]))
                    break
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
                shutil.rmtree(getattr(cluster, "nsysh2d_scratch", ""), ignore_errors=True)


def _result(future, job: Job):
    path = job.path
    try:
        out = json.loads(future.result())
    except Exception as e:   # the task kept failing (a worker killed each time it ran it, ...), or sent no JSON
        raise NsysH2DError(f"{path}: analysis failed on the Dask cluster ({type(e).__name__}: "
                           f"{str(e).splitlines()[0] if str(e) else ''})", EXIT_INTERNAL) from None
    try:
        if "error" in out:
            raise NsysH2DError(str(out["error"]), int(out["exit_code"]))
        return spec(job.analysis).from_json(out["report"])
    except (KeyError, TypeError, ValueError, AttributeError):
        raise NsysH2DError(f"{path}: the Dask cluster's result is not a report", EXIT_INTERNAL) from None


def _no_worker(path):
    raise NsysH2DError(f"{path}: not analyzed: the Dask cluster had no worker for {NO_WORKER_S:g} s",
                       EXIT_INTERNAL)
