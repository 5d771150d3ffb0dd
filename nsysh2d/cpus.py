"""How many threads one analysis runs: the CPUs this process may use, shared among the analyses running
at once, at most MAX_THREADS; `NSYSH2D_THREADS` overrides it.

os.cpu_count() and DuckDB's default count the whole host. A CI job or a batch job usually gets a few
CPUs of a large one (a cpuset: taskset, docker --cpuset-cpus, Slurm; or a CPU quota: docker --cpus,
Kubernetes limits), and `analyze -j N` runs N analyses side by side. More threads than CPUs cost CPU
and memory: the 1x scaled export on one CPU took 8.0 s with one thread and 9.2-9.5 s with two, and the
memory DuckDB needs grows with its threads (docs/benchmarks.md, "Threads and memory on other machines").
"""
from __future__ import annotations

import math
import os
from pathlib import Path

from .errors import BadInput

# Past 8 threads the joins need more memory than the default limit gives (trace.memory_limit) and the
# SQLite readers are capped at 8 already (ingest.py); nothing faster was measured beyond (2 cores here).
MAX_THREADS = 8

_share = 1   # analyses of this process group running at once (run.py's pool sets it in each worker)


def share(n: int) -> None:
    """This process is one of n analyses running at once on the same CPUs (ProcessPoolExecutor initializer)."""
    global _share
    _share = max(1, int(n))


def usable_cpus(cgroup_root: str = "/sys/fs/cgroup") -> int:
    """CPUs this process may run on: its affinity mask, lowered to a cgroup CPU quota where there is one."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):   # not Linux
        n = os.cpu_count() or 1
    quota = cgroup_cpu_quota(cgroup_root)
    if quota is not None:
        n = min(n, max(1, math.ceil(quota)))
    return max(1, n)


def cgroup_cpu_quota(root: str = "/sys/fs/cgroup") -> float | None:
    """CPUs' worth of time per period the cgroup allows (v2 cpu.max "200000 100000" -> 2.0; v1
    cpu.cfs_quota_us / cpu.cfs_period_us), None without a limit or a readable file."""
    base = Path(root)
    try:
        text = (base / "cpu.max").read_text().split()
        if len(text) == 2 and text[0] != "max":
            return int(text[0]) / int(text[1])
        return None
    except (OSError, ValueError, ZeroDivisionError):
        pass
    try:
        q = int((base / "cpu" / "cpu.cfs_quota_us").read_text())
        p = int((base / "cpu" / "cpu.cfs_period_us").read_text())
        return q / p if q > 0 and p > 0 else None
    except (OSError, ValueError):
        return None


def analysis_threads() -> int:
    """Threads for DuckDB and the SQLite readers of one analysis in this process."""
    value = os.environ.get("NSYSH2D_THREADS", "").strip()
    if value:
        if not value.isdigit() or int(value) < 1:
            raise BadInput(f"bad NSYSH2D_THREADS={value!r}: a whole number of threads, 1 or more")
        return int(value)
    return max(1, min(usable_cpus() // _share, MAX_THREADS))
