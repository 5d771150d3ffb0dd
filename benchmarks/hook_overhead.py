#!/usr/bin/env python3
"""What the copy hook (capture/site_hook.py) costs a capture, from the H100 runs of tests/data/h100/sites/:
nsys profile wall time and .nsys-rep size per capture (captures.txt), and the workload's own host timer per step
(qwen-host.json.gz: workloads/qwen3vl.py --json), with the hook (--sites) against without it (--no-sites), the
captures interleaved (before/after x sites/no-sites, rounds 1-4). Medians; prints a table and the ratios.
usage: python benchmarks/hook_overhead.py [FOLDER]"""
import gzip
import json
import re
import statistics as st
import sys
from pathlib import Path

folder = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "tests/data/h100/sites")
caps = {}
for line in (folder / "captures.txt").read_text().splitlines():
    m = re.match(r"qwen3vl-(before|after)-(sites|no-sites)-(\d) rc=0 wall_ms=(\d+)? ?.*rep_bytes=(\d+)", line)
    if m:
        caps.setdefault((m[1], m[2]), []).append((int(m[4]) if m[4] else None, int(m[5])))
runs = json.load(gzip.open(folder / "qwen-host.json.gz"))
decode = [2, 3, 6, 7]   # the steady decode steps (the others hold a new request's vision work)
print(f"{'variant':8} {'capture':9} {'runs':>4} {'profile s':>10} {'rep MiB':>8} {'decode ms/step':>15} {'steps 1-7 s':>12}")
rows = {}
for v in ("before", "after"):
    for c in ("no-sites", "sites"):
        rs = [r for r in runs if r["variant"] == v and r["capture"] == c]
        walls = [w for w, _ in caps[(v, c)] if w]
        row = (st.median(walls) / 1000, st.median(b for _, b in caps[(v, c)]) / 2**20,
               st.median(st.mean(r["host_ms"][i] for i in decode) for r in rs),
               st.median(sum(r["host_ms"][1:]) for r in rs) / 1000)
        rows[(v, c)] = row
        print(f"{v:8} {c:9} {len(rs):>4} {row[0]:>10.2f} {row[1]:>8.3f} {row[2]:>15.2f} {row[3]:>12.2f}")
for v in ("before", "after"):
    a, b = rows[(v, "sites")], rows[(v, "no-sites")]
    print(f"{v}: sites / no-sites  profile time {a[0] / b[0]:.3f}x, report size {a[1] / b[1]:.3f}x, "
          f"decode step {a[2] / b[2]:.3f}x, steps 1-7 {a[3] / b[3]:.3f}x")
