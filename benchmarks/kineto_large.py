#!/usr/bin/env python3
"""A large Kineto trace read within bounded memory: a real capture repeated end to end (times shifted past the
previous copy, correlation and Python ids renumbered) until the JSON reaches --mb, then `nsysh2d analyze`
on it, cold, with its wall time, peak RSS and the totals against the repeated copy's own totals x repeats.
usage: python benchmarks/kineto_large.py [--mb 1024] [--trace tests/data/kineto/qwen3vl-before.pt.trace.json.gz]"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def repeated(src: Path, dst: Path, mb: int) -> int:
    doc = json.load(gzip.open(src, "rt"))
    events = doc.pop("traceEvents")
    xs = [e for e in events if "ts" in e and isinstance(e.get("ts"), (int, float))]
    span = max(e["ts"] + e.get("dur", 0) for e in xs) - min(e["ts"] for e in xs) + 1000.0
    corr = max(e.get("args", {}).get("correlation", 0) or 0 for e in xs) + 1
    pyid = max(e.get("args", {}).get("Python id", 0) or 0 for e in xs) + 1
    n = 0
    with open(dst, "w") as f:
        f.write('{"schemaVersion": 1, "deviceProperties": ' + json.dumps(doc.get("deviceProperties", [])) +
                ', "traceEvents": [\n')
        first = True
        while f.tell() < mb << 20:
            for e in xs:
                e = dict(e, ts=e["ts"] + n * span)
                a = e.get("args")
                if isinstance(a, dict):
                    a = dict(a)
                    if isinstance(a.get("correlation"), int):
                        a["correlation"] += n * corr
                    for k in ("Python id", "Python parent id"):
                        if isinstance(a.get(k), int):
                            a[k] += n * pyid
                    e["args"] = a
                f.write(("" if first else ",\n") + json.dumps(e))
                first = False
            n += 1
        f.write("\n]}\n")
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--trace", default=str(ROOT / "tests/data/kineto/qwen3vl-before.pt.trace.json.gz"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "big.json"
        t = time.perf_counter()
        n = repeated(Path(args.trace), big, args.mb)
        made = time.perf_counter() - t
        size = big.stat().st_size
        one = json.loads(subprocess.run([sys.executable, "-m", "nsysh2d.cli", "analyze", args.trace, "--format",
                                         "json", "--no-cache"], capture_output=True, text=True).stdout)
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "nsysh2d.cli", "analyze", str(big), "--format", "json",
                            "--no-cache"], capture_output=True, text=True, env={**os.environ})
        wall = time.perf_counter() - t
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if r.returncode:
            print(r.stderr, file=sys.stderr)
            return 1
        got = json.loads(r.stdout)["reports"][0]["totals"]
        want = one["reports"][0]["totals"]
    print(f"| trace | JSON size | copies of the capture | analyze wall | peak RSS | calls (x{n} expected) |")
    print("|---|---|---|---|---|---|")
    print(f"| {Path(args.trace).name} x{n} (made in {made:.0f} s) | {size / 2**20:.0f} MiB | {n} | {wall:.1f} s | "
          f"{rss:.0f} MB | {got['calls']} ({want['calls'] * n}) |")
    return 0 if got["calls"] == want["calls"] * n else 1


if __name__ == "__main__":
    sys.exit(main())
