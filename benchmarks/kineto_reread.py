"""Issue 56.5: a second command on a Kineto trace, with an option not used before (so no cached report serves
it), with the code of REV and with the working tree. REV parses the JSON again; the working tree reads the
normalized tables it cached the first time. Interleaved runs (old, new, old, new, ...), medians, the ratio new/old.

    python benchmarks/kineto_reread.py 687e296                      # the bundled 3 MB qwen3vl-before .json.gz
    python benchmarks/kineto_reread.py 687e296 TRACE --reps 9
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from same_outputs import LAUNCH, ROOT, checkout  # noqa: E402

TRACE = ROOT / "tests" / "data" / "kineto" / "qwen3vl-before.pt.trace.json.gz"


def run(code: Path, trace: str, cache: str, min_us: int) -> float:
    start = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", LAUNCH, str(code), "analyze", trace, "--min-duration", f"{min_us}us",
                        "--format", "json"], capture_output=True, text=True,
                       env={**os.environ, "NSYSH2D_CACHE_DIR": cache, "NSYSH2D_QUIET": "1"})
    took = time.perf_counter() - start
    if p.returncode != 0:
        sys.exit(f"{code}: exit {p.returncode}: {p.stderr.strip()}")
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rev", help="git revision to compare with (the code before the change)")
    ap.add_argument("trace", nargs="?", default=str(TRACE))
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "old").mkdir()
        old = checkout(args.rev, Path(tmp) / "old")
        new = ROOT
        caches = {"old": str(Path(tmp) / "cache-old"), "new": str(Path(tmp) / "cache-new")}
        codes = {"old": old, "new": new}
        for side in codes:   # the first command: each side fills its own cache
            run(codes[side], args.trace, caches[side], 100)
        times: dict[str, list[float]] = {"old": [], "new": []}
        for i in range(args.reps):
            for side in ("old", "new"):   # each run a --min-duration neither side has seen: no cached report
                times[side].append(run(codes[side], args.trace, caches[side], 101 + i))
    med = {s: statistics.median(t) for s, t in times.items()}
    print(f"trace: {args.trace} ({os.path.getsize(args.trace) / 1e6:.1f} MB); {args.reps} interleaved runs each; "
          "second command, new option")
    print(f"{'code':<24} {'median s':>9} {'min s':>7} {'max s':>7}")
    for side, label in (("old", f"{args.rev} (re-parses)"), ("new", "working tree (cached)")):
        print(f"{label:<24} {med[side]:>9.2f} {min(times[side]):>7.2f} {max(times[side]):>7.2f}")
    print(f"ratio new/old: {med['new'] / med['old']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
