#!/usr/bin/env python3
"""Does what the runtime checker flags really block? (issue 18) On a GPU: each layout of an 8 MiB copy with
non_blocking=True, behind --backlog-ms of queued `torch.cuda._sleep`, timed on the host while the checker
(nsysh2d.runtime.Checker) watches. Prints a Markdown table: the checker's class and verdict next to the
measured host time, and whether the two agree (flagged ⇔ the call lasted at least half the backlog;
not flagged ⇔ it returned in < 0.5 ms).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def cases(torch, mib: int):
    n = mib * 1024 * 1024 // 4
    rows = 64
    dev = "cuda"

    def pinned(shape):
        return torch.ones(shape, dtype=torch.float32).pin_memory()

    return {
        "pinned contiguous": (pinned((rows, n // rows)), lambda b: b.to(dev, non_blocking=True)),
        "pageable": (torch.ones(rows, n // rows), lambda b: b.to(dev, non_blocking=True)),
        "numpy-backed": (None, lambda b: b.to(dev, non_blocking=True)),
        "pinned sliced [:, :n/2]": (pinned((rows, 2 * n // rows)), lambda b: b[:, : n // rows].to(dev, non_blocking=True)),
        "pinned rows one by one": (pinned((rows, 2 * n // rows)),
                                   lambda b: [b[i, : n // rows].to(dev, non_blocking=True) for i in range(rows)]),
        "pinned transposed (dense)": (pinned((rows, n // rows)), lambda b: b.t().to(dev, non_blocking=True)),
        "pinned dtype change": (pinned((rows, n // rows)),
                                lambda b: b.to(dev, dtype=torch.float16, non_blocking=True)),
        "pinned transposed + dtype change": (pinned((rows, n // rows)),
                                             lambda b: b.t().to(dev, dtype=torch.float16, non_blocking=True)),
        "pinned expanded": (pinned((1, n // rows)), lambda b: b.expand(rows, n // rows).to(dev, non_blocking=True)),
        "copy_ pinned transposed into contiguous": (
            pinned((rows, n // rows)), lambda b: torch.empty(n // rows, rows, device=dev).copy_(b.t(), non_blocking=True)),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backlog-ms", type=float, default=10.0)
    ap.add_argument("--mib", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args(argv)

    import numpy as np
    import torch

    from nsysh2d.runtime import Checker

    if not torch.cuda.is_available():
        print("runtime_check_probe: no CUDA device", file=sys.stderr)
        return 2
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1_000_000)
    start.record(); torch.cuda._sleep(20_000_000); end.record(); torch.cuda.synchronize()
    cycles = int(20_000_000 / start.elapsed_time(end) * args.backlog_ms)
    out = []
    for name, (buf, copy) in cases(torch, args.mib).items():
        if buf is None:
            buf = torch.from_numpy(np.ones((64, args.mib * 1024 * 1024 // 4 // 64), dtype=np.float32))
        copy(buf)  # warm-up (allocations, caching host allocator)
        torch.cuda.synchronize()
        host_us, classes, flagged, n = [], set(), set(), 1
        for _ in range(args.repeats):
            torch.cuda._sleep(cycles)
            with Checker() as chk:
                t0 = time.perf_counter()
                copy(buf)
                host_us.append((time.perf_counter() - t0) * 1e6)
            torch.cuda.synchronize()
            classes |= {c.source_class for c in chk.copies}
            n = max(1, len(chk.copies))
            flagged |= {c.flagged for c in chk.copies}
        med = statistics.median(host_us)
        is_flagged = flagged == {True}
        # flagged: the call waited for (at least half) the backlog; not: each copy returned in < 0.5 ms
        agrees = med >= 500 * args.backlog_ms if is_flagged else med / n < 500
        out.append({"case": name, "copies": n, "classes": sorted(classes), "flagged": is_flagged,
                    "median_host_us": round(med, 1),
                    "max_host_us": round(max(host_us), 1), "agrees": agrees})
    print(f"device={torch.cuda.get_device_name()} torch={torch.__version__} backlog_ms={args.backlog_ms} "
          f"payload={args.mib} MiB repeats={args.repeats}")
    print("| case | copies per call | checker class | flagged | median host (µs) | max host (µs) | agrees |")
    print("|---|---:|---|---|---:|---:|---|")
    for r in out:
        print(f"| {r['case']} | {r['copies']} | {', '.join(r['classes'])} | {'yes' if r['flagged'] else 'no'} | "
              f"{r['median_host_us']} | {r['max_host_us']} | {'yes' if r['agrees'] else 'NO'} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0 if all(r["agrees"] for r in out) else 1


if __name__ == "__main__":
    sys.exit(main())
