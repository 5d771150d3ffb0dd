#!/usr/bin/env python3
"""How fast can a cold analysis be on this machine? The parts every copy report needs, each timed alone
(wall and CPU seconds, all threads), against `nsys analyze -r cuda_memcpy_async` in the same run.

The parts, in the order a cold run does them: the interpreter with the analysis libraries imported, the
file opened (DuckDB, the sqlite scanner attached), the copy calls' runtime rows (20 M rows scanned inside
SQLite, ~2 M leave it: ingest.py), the memcpy activity (DuckDB's sqlite scanner, into the compressed store),
the NVTX range tree, and each part of calls joined to its activity and its innermost NVTX range, only
counted (nothing stored: the least a streaming model would do per call). Labels, attribution, folding,
steps, the backlog and the reports are left out: a real analysis costs more than these parts together.

Every part keeps a core busy for its CPU seconds, so on N cores no analysis that does these parts this
way finishes before (their CPU seconds) / N: the line `floor` prints that bound against the peer's wall time,
and how many cores a 0.8x cold run would need at this CPU (issue 21's target), for the parts alone and for
the whole `nsysh2d analyze`. Two last rows do the same for `nsysh2d api-summary`: the scanner's read of the
three columns it needs, alone, and with its counting per function and duration.

usage: cold_floor.py FILE.sqlite [--reps 3] [--nsys PATH]
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import harness  # noqa: E402  (beside this file)

IMPORTS = "import duckdb, pyarrow, adbc_driver_manager, adbc_driver_sqlite, nsysh2d.model"


def process(cmd: list[str], env=None) -> tuple[float, float]:
    """(wall, CPU seconds) of one whole process (harness.run); it must succeed."""
    wall, _mb, rc, cpu_s = harness.run(cmd, env)
    if rc != 0:
        sys.exit(f"cold_floor.py: {' '.join(cmd)} failed (exit {rc})")
    return wall, cpu_s


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Clock:
    """Wall and CPU seconds (this process, every thread) of named parts, appended per repetition."""

    def __init__(self):
        self.got: dict[str, list[tuple[float, float]]] = {}

    def __call__(self, name: str, fn):
        t, c = time.perf_counter(), cpu()
        out = fn()
        self.got.setdefault(name, []).append((time.perf_counter() - t, cpu() - c))
        return out


def parts_once(path: str, clock: Clock) -> int:
    """One cold pass over the parts (a fresh connection); the number of calls joined."""
    from nsysh2d.model import pipeline
    from nsysh2d.source import Trace

    trace = clock("open: DuckDB, scanner attached, views", lambda: Trace.open(path))
    con = trace.con
    try:
        parts = clock("copy calls' runtime rows (SQLite filter, ADBC)",
                      lambda: list(pipeline.read_calls(trace)))
        by_name = {s.name: s for s in pipeline.PIPELINE}

        def memcpy():
            pipeline.run_step(trace, by_name["store"])
            pipeline.run_step(trace, by_name["store_memcpy"])
        clock("memcpy activity (scanner, into the store)", memcpy)

        def nvtx():
            pipeline.run_step(trace, by_name["rules"])
            pipeline.run_step(trace, by_name["nvtx"])
        clock("NVTX ranges read, range tree built", nvtx)

        def join():
            n = 0
            for part in parts:
                con.register("part", part)
                # the part's calls as copies_join.sql names them, joined to the activity of their id range only
                con.execute("CREATE OR REPLACE TEMP VIEW part_calls AS SELECT global_tid, start AS api_start, "
                            '"end" AS api_end, correlation_id FROM part')
                # the bounds as constants: DuckDB skips the store's row groups outside them (zone maps)
                lo, hi = con.execute("SELECT min(correlation_id), max(correlation_id) FROM part").fetchone()
                n += con.execute("""
                    SELECT count(*) FROM with_nvtx('part_calls') a
                    JOIN memcpy_raw m ON m.correlation_id = a.correlation_id
                     AND (m.global_pid IS NULL OR m.global_pid = global_pid_of(a.global_tid))
                    WHERE m.correlation_id BETWEEN $lo AND $hi
                """, {"lo": lo, "hi": hi}).fetchone()[0]
                con.unregister("part")
            return n
        return clock("calls joined to activity + NVTX range, counted", join)
    finally:
        trace.close()


def api_summary_once(path: str, clock: Clock) -> None:
    """api-summary's read alone (DuckDB's sqlite scanner: nameId, start, end of every runtime row, only
    summed) and its counting per function and duration (analyses/api_durations.sql), on a fresh connection."""
    from nsysh2d.analyses.api_summary import read_durations
    from nsysh2d.source import Trace

    trace = Trace.open(path)
    try:
        clock("api-summary: runtime rows read (scanner), summed", lambda: trace.con.execute(
            'SELECT count(*), sum(name_id), sum("end" - start) FROM n.runtime').fetchall())
        clock("api-summary: read, counted per function, duration", lambda: read_durations(trace))
    finally:
        trace.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--nsys", default=harness.default_nsys())
    a = ap.parse_args(argv)
    path = os.path.abspath(a.file)
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)   # page cache warm, as harness.py

    have_peer = os.path.isfile(a.nsys) and os.access(a.nsys, os.X_OK)
    peer = [process([a.nsys, "analyze", "-r", "cuda_memcpy_async", "-q", "--force-overwrite", "true", path])
            for _ in range(a.reps)] if have_peer else []
    clock = Clock()
    for _ in range(a.reps):
        clock.got.setdefault("interpreter + analysis imports", []).append(
            process([sys.executable, "-c", IMPORTS]))
        pairs = parts_once(path, clock)
    reads = Clock()
    for _ in range(a.reps):
        api_summary_once(path, reads)
    tool = harness.find_nsysh2d()
    full = []
    for _ in range(a.reps):
        with tempfile.TemporaryDirectory() as cache:
            full.append(process(tool + ["analyze", path], env={**os.environ, "NSYSH2D_CACHE_DIR": cache}))

    med = lambda xs, i: statistics.median(x[i] for x in xs)   # noqa: E731
    cores = os.cpu_count() or 1
    print(f"# {path}: {pairs} copy call/activity pairs joined; {cores} cores; median of {a.reps} runs, page cache warm")
    print(f"{'part':52s} {'wall s':>7s} {'CPU s':>7s}  CPU vs the peer's CPU")
    peer_cpu = med(peer, 1) if peer else None
    vs = (lambda c: f"{c / peer_cpu:5.2f}x") if peer else (lambda c: "    -")
    if peer:
        print(f"{'nsys analyze -r cuda_memcpy_async (peer)':52s} {med(peer, 0):7.2f} {peer_cpu:7.2f}")
    else:
        print(f"nsys analyze: absent ({a.nsys}): no ratios")
    total = 0.0
    for name, got in clock.got.items():
        w, c = med(got, 0), med(got, 1)
        total += c
        print(f"{name:52s} {w:7.2f} {c:7.2f}  {vs(c)}")
    print(f"{'the parts together':52s} {'':7s} {total:7.2f}  {vs(total)}")
    fw, fc = med(full, 0), med(full, 1)
    print(f"{'nsysh2d analyze, cold (whole process)':52s} {fw:7.2f} {fc:7.2f}  {vs(fc)}")
    for name, got in reads.got.items():
        print(f"{name:52s} {med(got, 0):7.2f} {med(got, 1):7.2f}")
    if peer:
        peer_wall = med(peer, 0)
        target = 0.8 * peer_wall
        print(f"floor: the parts' CPU / {cores} cores = {total / cores:.2f} s = {total / cores / peer_wall:.2f}x the "
              f"peer's wall time (target 0.8x = {target:.2f} s); cores a 0.8x run needs at this CPU, perfectly "
              f"parallel: {total / target:.1f} for the parts alone, {fc / target:.1f} for nsysh2d analyze "
              f"(cold {fw / peer_wall:.2f}x here)")
    else:
        print(f"floor: the parts' CPU / {cores} cores = {total / cores:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
