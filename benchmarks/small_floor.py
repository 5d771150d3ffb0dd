#!/usr/bin/env python3
"""What a cold report of a small (CI-sized) export costs before it reads a byte: the interpreter, click, DuckDB's
import, nsysh2d's `--help`, against a whole `nsysh2d analyze --no-cache` and `nsys analyze -r cuda_memcpy_async`
(the peer) on the same exports, in one run. Interleaved, medians of wall seconds, page cache warm.

Issue 38 asks for a median cold report <= 4x the peer and <= 0.15 s; the rows before the reports show how much of
that budget goes before any work, with DuckDB in the process (the analyses' SQL runs in it).

usage: small_floor.py EXPORT.sqlite... [--reps 7] [--nsys PATH]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import default_nsys  # noqa: E402

PY = sys.executable
FIXED = [("python -c pass", [PY, "-c", "pass"]),
         ("python: import click", [PY, "-c", "import click"]),
         ("python: import click, duckdb", [PY, "-c", "import click, duckdb"]),
         ("nsysh2d --help", [PY, "-m", "nsysh2d.cli", "--help"])]


def wall(cmd: list[str], env: dict) -> float:
    start = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, env=env)
    took = time.perf_counter() - start
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.decode()[-300:]}")
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("exports", nargs="+")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--nsys", default=default_nsys())
    args = ap.parse_args()
    env = {**os.environ, "NSYSH2D_CACHE_DIR": tempfile.mkdtemp(prefix="small-floor-")}
    rows = list(FIXED)
    for path in args.exports:
        rows.append((f"nsysh2d analyze {os.path.basename(path)}", [PY, "-m", "nsysh2d.cli", "analyze", "--no-cache", path]))
        rows.append((f"nsys analyze {os.path.basename(path)}",
                     [args.nsys, "analyze", "-r", "cuda_memcpy_async", "--force-export=false", path]))
    times: dict[str, list[float]] = {name: [] for name, _ in rows}
    for _ in range(args.reps):
        for name, cmd in rows:
            times[name].append(wall(cmd, env))
    med = {name: statistics.median(v) for name, v in times.items()}
    print(f"# {args.reps} interleaved runs, medians; {os.cpu_count()} cores")
    print(f"{'what':<52}{'wall s':>8}{'vs peer':>9}")
    for name, _ in FIXED:
        print(f"{name:<52}{med[name]:>8.3f}")
    ratios = []
    for path in args.exports:
        mine, peer = med[f"nsysh2d analyze {os.path.basename(path)}"], med[f"nsys analyze {os.path.basename(path)}"]
        ratios.append(mine / peer)
        print(f"{'nsysh2d analyze --no-cache ' + os.path.basename(path):<52}{mine:>8.3f}{mine / peer:>8.1f}x")
        print(f"{'nsys analyze -r cuda_memcpy_async (peer)':<52}{peer:>8.3f}")
    print(f"median ratio over {len(ratios)} exports: {statistics.median(ratios):.1f}x; before any work "
          f"(click and DuckDB imported): {med[FIXED[2][0]]:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
