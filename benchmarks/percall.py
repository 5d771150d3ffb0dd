"""The compiled per-call pass (source/percall.py) against the SQL-only path and the peer, in one run: a cold
`nsysh2d analyze --no-cache --format json` in a fresh process with NSYSH2D_PERCALL=1 and =0, and `nsys analyze -r
cuda_memcpy_async` on the same file, interleaved; medians of wall time and of peak RSS (the process and its
children, from wait4), ratios against the peer; the two reports must be equal. --stages adds one run of each path
with NSYSH2D_TIMING=1 and prints where the time went (pipeline.py's stages).

    python benchmarks/percall.py /tmp/large-1.sqlite --reps 5 [--stages] [--nsys PATH]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from harness import default_nsys


def peak_of(cmd: list[str], env: dict) -> tuple[float, float, str, str]:
    """(wall s, peak RSS MB, stdout, stderr) of one process (its own rusage, from os.wait4)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _pid, status, usage = os.wait4(p.pid, 0)
        took = time.perf_counter() - start
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text, errors = out.read(), err.read()
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed ({p.returncode}): {errors.strip()[-500:]}")
    return took, usage.ru_maxrss / 1024, text, errors


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--nsys", default=default_nsys())
    ap.add_argument("--stages", action="store_true")
    args = ap.parse_args()
    me = [sys.executable, "-m", "nsysh2d.cli", "analyze", args.trace, "--no-cache", "--format", "json"]
    peer = [args.nsys, "analyze", "-r", "cuda_memcpy_async", "--force-export=false", args.trace]
    have_peer = os.path.isfile(args.nsys) and os.access(args.nsys, os.X_OK)
    cases = {"compiled pass": (me, {"NSYSH2D_PERCALL": "1"}), "SQL-only": (me, {"NSYSH2D_PERCALL": "0"})}
    if have_peer:
        cases["nsys analyze"] = (peer, {})
    times: dict[str, list[float]] = {k: [] for k in cases}
    peaks: dict[str, list[float]] = {k: [] for k in cases}
    reports = {}
    for _ in range(args.reps):
        for name, (cmd, extra) in cases.items():
            took, peak, out, _err = peak_of(cmd, {**os.environ, **extra})
            times[name].append(took)
            peaks[name].append(peak)
            if cmd is me:
                reports[name] = out
    load = os.getloadavg()
    print(f"# {args.trace}; {args.reps} interleaved runs each, medians; load average at the end {load[0]:.1f} "
          f"on {os.cpu_count()} CPUs")
    ref = statistics.median(times["nsys analyze"]) if have_peer else None
    print(f"{'what':<16}{'wall s':>9}{'min s':>8}{'max s':>8}{'peak MB':>9}{'vs nsys analyze':>17}")
    for name in cases:
        t = statistics.median(times[name])
        ratio = f"{t / ref:.2f}x" if ref else "-"
        print(f"{name:<16}{t:>9.3f}{min(times[name]):>8.3f}{max(times[name]):>8.3f}"
              f"{statistics.median(peaks[name]):>9.0f}{ratio:>17}")
    same = reports["compiled pass"] == reports["SQL-only"]
    print(f"reports equal: {'yes' if same else 'NO'}")
    if args.stages:
        for name in ("compiled pass", "SQL-only"):
            cmd, extra = cases[name]
            _t, _p, _out, err = peak_of(cmd, {**os.environ, **extra, "NSYSH2D_TIMING": "1"})
            print(f"## stages, {name}")
            print("\n".join(line for line in err.splitlines() if "a part" not in line))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
