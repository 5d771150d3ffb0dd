"""Model layer: one row per copy call, attributed (call site, source class, NVTX range), with the GPU
backlog behind it on demand. Built by the named steps of pipeline.py; analyses read `copies_x`."""
from __future__ import annotations

# SQL in Python: two one-line reads of tables the pipeline made (no value from outside reaches them).

import os
from contextlib import contextmanager

from ..source import Trace, open_input
from . import pipeline


# Measured on an H200 (tests/test_h200_apis.py, docs/compatibility.md): workloads/api_probe.py traced with and
# without --python-backtrace.
PYTHON_BACKTRACE_NOTE = (
    "Python backtraces were collected (--python-backtrace): their stack unwinding costs the program time around "
    "each CUDA call that nsys leaves out of the call's duration (H200: a pinned copy's call took 19 us in the "
    "trace with them and 18 us without, while a host timer around it read 88 us and 41 us), so host times here "
    "are not inflated by it, but the traced program's own step times are")


# Beyond this many long calls, GPU idle is computed only for the calls listed (model/backlog_probes.sql).
GPU_IDLE_MAX = int(os.environ.get("NSYSH2D_GPU_IDLE_MAX", "5000"))


def kind_check(contradicts, ck, sk, dk, ck_known, sk_known, dk_known, ck_name, sk_name, dk_name, n) -> str:
    """One row of model/kind_checks.sql in words: the ids, CUPTI's names for them, and what the file says."""
    if contradicts:
        return (f"{n} copy calls whose copyKind {ck} ({ck_known}) contradicts their memory kinds srcKind {sk} "
                f"({sk_known}) -> dstKind {dk} ({dk_known})")
    undefined = [f"{col} {v} (the file's {table} calls it {name!r})" if name and not name.startswith("kind ")
                 else f"{col} {v}" for col, v, known, name, table in (
        ("copyKind", ck, ck_known, ck_name, "ENUM_CUDA_MEMCPY_OPER"), ("srcKind", sk, sk_known, sk_name,
         "ENUM_CUDA_MEM_KIND"), ("dstKind", dk, dk_known, dk_name, "ENUM_CUDA_MEM_KIND")) if known is None]
    return f"{n} copy calls with an id CUPTI does not define: {', '.join(undefined)}"


class CopyModel:
    """The copy calls of one opened trace (view copies_x), and the anomalies found building them."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self._backlog_asked: set = set()
        self._idle_partial = False   # GPU idle left out for some long calls (GPU_IDLE_MAX): said once
        pipeline.build(trace)
        self.warnings = list(trace.warnings)
        self.inconsistencies = list(trace.inconsistencies)
        self.anomalies: dict[str, int] = {}
        with pipeline.stage("anomalies"):
            for key, what, n in trace.run("model/anomalies").fetchall():
                self.anomalies[key] = n or 0
                if n:
                    self.warnings.append(f"{n} {what}")
            self.inconsistencies += [kind_check(*row) for row in trace.run("model/kind_checks").fetchall()]
        if trace.meta.get("python_backtrace"):
            self.warnings.append(PYTHON_BACKTRACE_NOTE)

    @classmethod
    def open(cls, path: str, **kwargs) -> "CopyModel":
        with pipeline.stage("open"):
            trace = Trace.open(path, **kwargs)
        try:
            return cls(trace)
        except BaseException:
            trace.close()
            raise

    def ensure_backlog(self, min_ns: int = 0, direction: str = "all", limit: int | None = None) -> None:
        """The stream backlog of the calls a report with these options needs (model/backlog_probes.sql);
        min_ns=0 and limit=None: of every call."""
        if (min_ns, direction, limit) in self._backlog_asked:
            return
        self._backlog_asked.add((min_ns, direction, limit))
        params = {"min_ns": min_ns, "direction": direction, "limit": limit, "all_max": GPU_IDLE_MAX}
        first, *rest = pipeline.BACKLOG
        pipeline.run_step(self.trace, first, params=params)
        n, n_long = self.trace.con.execute("SELECT count(*), COALESCE(max(n_long), 0) FROM probes").fetchone()
        if min_ns and not self._idle_partial and n_long > GPU_IDLE_MAX:
            self._idle_partial = True
            self.warnings.append(f"GPU idle computed for the longest calls only ({n_long} long calls, more than "
                                 f"NSYSH2D_GPU_IDLE_MAX={GPU_IDLE_MAX}): group and total GPU idle are null; "
                                 "raise NSYSH2D_GPU_IDLE_MAX to compute them")
        if n:
            with pipeline.stage(f"backlog of {n} calls"):
                for step in rest:
                    pipeline.run_step(self.trace, step)

    def copies(self):
        """Every copy call with its attribution and backlog, one row per API call (polars)."""
        self.ensure_backlog()
        return self.trace.con.execute("SELECT * FROM copies_x ORDER BY api_start").pl()

    def rows(self, name: str, params: dict | None = None) -> list[dict]:
        return self.trace.rows(name, params)

    @property
    def path(self) -> str:
        """The report as the user named it (a .nsys-rep stays a .nsys-rep)."""
        return self.trace.source or self.trace.path

    @property
    def meta(self) -> dict:
        return self.trace.meta

    def close(self) -> None:
        self.trace.close()


@contextmanager
def open_model(path: str, nsys: str | None = None, threads: int | None = None, use_cache: bool = True):
    """The model of the trace at `path`, through the one opener (source.open_input): closed when the block ends, and
    damage in the file met while building or reading it is one line of bad input naming it."""
    with open_input(path, nsys, threads, use_cache) as trace:
        yield CopyModel(trace)
