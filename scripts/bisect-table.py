#!/usr/bin/env python3
"""The pageable-copy threshold, bisected (docs/why-non-blocking-blocks.md): from `workloads/h2d_sweep.py --json`
output (.json or .json.gz), per variant, backlog and copies in flight, the largest payload whose slowest copy
returned and the smallest from which on it waited (host time >= half the backlog) in most repeats.

usage: scripts/bisect-table.py SWEEP.json[.gz]   (prints a Markdown table)
"""
import gzip
import json
import sys
from collections import defaultdict

d = json.load(gzip.open(sys.argv[1], "rt") if sys.argv[1].endswith(".gz") else open(sys.argv[1]))
# per (variant, backlog, inflight, bytes, rep): the slowest call of the k in flight
slow = defaultdict(float)
for r in d["records"]:
    key = (r["variant"], r["backlog_us"], r["inflight"], r["bytes"], r["rep"])
    slow[key] = max(slow[key], r["host_us"])
waited = defaultdict(list)
for (v, b, k, n, rep), us in slow.items():
    waited[(v, b, k, n)].append(us >= 0.5 * b)
series = defaultdict(dict)
for (v, b, k, n), w in waited.items():
    series[(v, b, k)][n] = sum(w) * 2 > len(w)
print(f"# {d['device']}, torch {d['torch']}")
print("| variant | backlog | in flight | returns at | waits from | sizes that broke the pattern |")
print("|---|---|---|---|---|---|")
for (v, b, k) in sorted(series):
    s = series[(v, b, k)]
    sizes = sorted(s)
    first = None
    for n in reversed(sizes):
        if not s[n]:
            break
        first = n
    below = max((n for n in sizes if first is not None and n < first), default=None)
    odd = [n for n in sizes if first is not None and n < first and s[n]]
    kib = lambda n: "-" if n is None else f"{n // 1024} KiB"
    print(f"| {v} | {b / 1000:g} ms | {k} | {kib(below)} | {kib(first)} | {', '.join(kib(n) for n in odd) or '-'} |")
