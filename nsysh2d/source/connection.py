"""A DuckDB connection for one analysis: threads from the CPUs this process may use, a memory cap that grows
with them, and a private folder to spill into. Shared by the input adapters (trace.py)."""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import duckdb

from ..cache import cache_dir
from ..cpus import analysis_threads
from ..errors import EXIT_EXPORT_FAILED, BadInput, NsysH2DError

# DuckDB's own memory (tables, joins, sorts) stays under this; past it, it spills to disk. The parts
# ingest.py has in flight and the interpreter come on top (docs/benchmarks.md has the peak RSS). 160 MB
# for up to 2 threads: measured on the scaled exports (1x/2x/4x, two runs each), as fast as 200 MB
# (4.0-4.2 / 8.0-8.2 / 17.5-17.7 s against 4.0-4.9 / 7.8-8.7 / 17.1-17.6 s) with a peak RSS of 415-471 MB
# against 449-554 MB; 128 MB was slower at 4x (18.3-19.7 s). Each thread beyond needs its own share: at
# 160 MB the 1x export ran out of memory from 6 threads on, the 4x from 4 (it needed 161-192 MB at 4
# threads, 201-240 at 8, over 320 at 16); PER_THREAD gives about 1.3-1.5x what was needed.
BASE_THREADS, BASE_MB, PER_THREAD_MB = 2, 160, 40


def memory_limit(threads: int | None = None) -> str:
    """NSYSH2D_MEMORY_LIMIT as given, else the default for this many threads (this process's, from cpus.py)."""
    value = os.environ.get("NSYSH2D_MEMORY_LIMIT")
    if value is None:
        if threads is None:
            threads = analysis_threads()
        return f"{BASE_MB + PER_THREAD_MB * max(0, threads - BASE_THREADS)}MB"
    if not re.fullmatch(r"\s*\d+(\.\d+)?\s*([KMGT]i?B|B)\s*", value, re.I):
        raise BadInput(f"bad NSYSH2D_MEMORY_LIMIT={value!r}: a size such as 200MB or 2GiB")
    return value


def spill_folder() -> str:
    """A new folder, 0700, for this run's DuckDB spill files: in the user's cache, or in $TMPDIR when the
    cache cannot be written. Never a shared folder itself, where a link planted under DuckDB's file names
    would have its target overwritten (docs/security.md)."""
    try:
        base = cache_dir("spill")
    except (OSError, NsysH2DError):   # an unwritable or refused cache: a new folder in $TMPDIR is as safe
        base = None
    return tempfile.mkdtemp(prefix="run-", dir=base)


def duckdb_config(threads: int, spill: str) -> dict:
    """Bounded memory: past the limit DuckDB spills to `spill`, not RAM. `threads` set always: DuckDB's own
    default counts the host's CPUs, not those this process may use (cpus.py)."""
    # Arrow tables (ingest.py) give the planner no row counts; it then takes a join of millions of
    # rows for a tiny one and picks a nested loop, quadratic (17 s instead of 0.1 s on 100 k calls).
    return {"memory_limit": memory_limit(threads), "temp_directory": str(spill), "threads": threads,
            "preserve_insertion_order": False, "asof_loop_join_threshold": 0,
            "nested_loop_join_threshold": 0, "disabled_optimizers": "build_side_probe_side"}


def sqlite_extension_path() -> str:
    try:
        import duckdb_extension_sqlite_scanner as ext   # lazy: only an nsys export loads it; missing, it says so
    except ImportError:
        raise NsysH2DError("the DuckDB sqlite scanner is missing: pip install "
                           f"'duckdb-extension-sqlite-scanner=={duckdb.__version__}'", EXIT_EXPORT_FAILED) from None
    base = Path(ext.__file__).parent / "extensions"
    hits = sorted(base.glob(f"v{duckdb.__version__}/sqlite_scanner.duckdb_extension"))
    if not hits:
        raise NsysH2DError(f"the installed sqlite scanner does not match DuckDB {duckdb.__version__}; "
                           "reinstall nsysh2d", EXIT_EXPORT_FAILED)
    return str(hits[0])
