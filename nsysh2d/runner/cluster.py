"""Many reports on a Dask cluster (`--scheduler ADDRESS`, `local` for a LocalCluster): one task per report,
the reduction on the client (run.analyze_many). Workers import this installed module and read the reports
by path (shared storage): a report never travels as bytes, only its result (Report.to_json) comes back.

A worker that dies is Dask's to retry (its tasks go to another worker, up to the scheduler's
`allowed-failures`); a report whose task still fails is an `errors` entry; with no worker left for
NO_WORKER_S seconds the run stops with an error instead of waiting forever.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time

from ..errors import EXIT_BAD_INPUT, EXIT_INTERNAL, NsysH2DError

NO_WORKER_S = float(os.environ.get("NSYSH2D_NO_WORKER_TIMEOUT", "60"))


def task(path: str, opts, groups, nsys, use_cache, analysis: str = "report", source_root: str | None = None) -> str:
    """Runs on a worker: the result's JSON (jobs.ANALYSES), or its error (an NsysH2DError is a result, not a
    failure), as JSON text: what comes back is plain data, read by json on the client. source_root: the client's,
    where Kineto call sites' files are looked for (sites.resolve), so a worker names them as a local run does."""
    import json

    from .jobs import ANALYSES, report_job

    if source_root:
        os.environ["NSYSH2D_SOURCE_ROOT"] = source_root

    try:
        out = {"report": ANALYSES[analysis].to_json(report_job(path, opts, groups, nsys, use_cache, analysis))}
    except NsysH2DError as e:
        out = {"error": str(e), "exit_code": e.exit_code}
    return json.dumps(out, default=str)


def _distributed():
    try:
        import distributed
    except ImportError:
        raise NsysH2DError("--scheduler needs Dask: pip install 'nsysh2d[dask]'", EXIT_BAD_INPUT) from None
    return distributed


def connect(scheduler: str, workers: int | None = None):
    """(client, cluster or None) for an address (tcp://host:8786, host:8786) or `local`."""
    import logging

    distributed = _distributed()
    if scheduler == "local":
        from ..cpus import MAX_THREADS, analysis_threads, usable_cpus

        n = workers or min(usable_cpus(), MAX_THREADS)
        # Each worker process's analysis takes its share of this machine's CPUs (cpus.py), not all of them.
        env = {"NSYSH2D_THREADS": str(analysis_threads() if os.environ.get("NSYSH2D_THREADS")
                                      else max(1, usable_cpus() // n))}
        # The workers' scratch folder is a new private one, removed with the cluster (Dask's default is
        # $TMPDIR/dask-scratch-space, left behind and shared by every user of the machine).
        scratch = tempfile.mkdtemp(prefix="nsysh2d-dask-")
        import dask
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
    """The executors.py strategy on a Dask cluster: maps `task` over the reports; done(i, result) gets each as
    it finishes (result() returns the Report or raises NsysH2DError). args: task's arguments after the path
    (the analysis last)."""

    def __init__(self, scheduler: str, workers: int | None = None):
        self.scheduler, self.workers = scheduler, workers

    def map(self, paths: list[str], args, done) -> None:
        from .jobs import ANALYSES

        from_json = ANALYSES[args[-1] if len(args) > 4 else "report"].from_json
        distributed = _distributed()
        client, cluster = connect(self.scheduler, self.workers)
        try:
            from ..rules.sites import source_root
            futures = client.map(task, paths, *[[a] * len(paths) for a in args], pure=False, retries=2,
                                 source_root=source_root())
            index = {f.key: i for i, f in enumerate(futures)}
            pending, idle_since = set(futures), None
            while pending:
                try:
                    finished, pending = distributed.wait(list(pending), timeout=2, return_when="FIRST_COMPLETED")
                except TimeoutError:
                    finished = set()
                for f in finished:
                    done(index[f.key], lambda f=f: _result(f, paths[index[f.key]], from_json))
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


def _result(future, path, from_json):
    import json

    try:
        out = json.loads(future.result())
    except Exception as e:   # the task kept failing (a worker killed each time it ran it, ...), or sent no JSON
        raise NsysH2DError(f"{path}: analysis failed on the Dask cluster ({type(e).__name__}: "
                           f"{str(e).splitlines()[0] if str(e) else ''})", EXIT_INTERNAL) from None
    try:
        if "error" in out:
            raise NsysH2DError(str(out["error"]), int(out["exit_code"]))
        return from_json(out["report"])
    except (KeyError, TypeError, ValueError, AttributeError):
        raise NsysH2DError(f"{path}: the Dask cluster's result is not a report", EXIT_INTERNAL) from None


def _no_worker(path):
    raise NsysH2DError(f"{path}: not analyzed: the Dask cluster had no worker for {NO_WORKER_S:g} s",
                       EXIT_INTERNAL)
