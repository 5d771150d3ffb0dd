"""A/B of two versions of nsysh2d on one trace: cold `analyze --no-cache --format json`, runs interleaved
(old, new, old, new, ...), medians, the ratio new/old, and whether the two reports' figures are equal.

    python benchmarks/ab.py c7cb7f9 /tmp/hw/scale-025.sqlite          # that commit vs the working tree
    python benchmarks/ab.py c7cb7f9 TRACE --new a153eb9 --reps 9

For a change that must not alter results but may cost time: the peer is the code before it, measured in
the same run on the same machine (a harness run compares against nsys instead).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from same_outputs import LAUNCH, ROOT, checkout  # noqa: E402


def run(code: Path, trace: str, cache: str) -> tuple[float, dict]:
    start = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", LAUNCH, str(code), "analyze", trace, "--no-cache", "--format", "json"],
                       capture_output=True, text=True, env={**os.environ, "NSYSH2D_CACHE_DIR": cache})
    took = time.perf_counter() - start
    if p.returncode != 0:
        sys.exit(f"{code}: exit {p.returncode}: {p.stderr.strip()}")
    return took, json.loads(p.stdout)["reports"][0]


def figures(rep: dict) -> dict:
    """What both versions report (fields one of them added are left out of the comparison)."""
    return {k: rep[k] for k in ("totals", "by_kind", "by_site", "by_class", "by_nvtx", "top", "steps") if k in rep}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", help="git revision of the A side")
    ap.add_argument("trace")
    ap.add_argument("--new", help="git revision of the B side (default: the working tree)")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="ab-"))
    sides = {"old": checkout(args.old, Path(tempfile.mkdtemp(dir=base))),
             "new": checkout(args.new, Path(tempfile.mkdtemp(dir=base))) if args.new else ROOT}
    times: dict[str, list[float]] = {k: [] for k in sides}
    reps: dict[str, dict] = {}
    for _ in range(args.reps):
        for k, code in sides.items():
            t, reps[k] = run(code, args.trace, str(base / f"cache-{k}"))
            times[k].append(t)
    print(f"{'side':<5} {'median s':>9}  runs")
    for k in sides:
        print(f"{k:<5} {statistics.median(times[k]):9.3f}  " + " ".join(f"{t:.2f}" for t in times[k]))
    ft = {k: figures(r) for k, r in reps.items()}
    for r in ft.values():   # totals fields one side added
        r["totals"] = {kk: v for kk, v in r["totals"].items() if kk in reps["old"]["totals"] and kk in reps["new"]["totals"]}
    print(f"new/old: {statistics.median(times['new']) / statistics.median(times['old']):.3f}  "
          f"same figures: {ft['old'] == ft['new']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
