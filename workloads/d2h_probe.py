#!/usr/bin/env python3
"""Device-to-host copies behind a GPU backlog: which destinations block the host (issue 15.3).

Each step queues about --backlog-ms of `torch.cuda._sleep` kernels on the current stream, then reads
--mib MiB (or one value) back to the host one way, and times that call on the host:

  item                 t[0].item()                                   pageable 4-byte destination
  cpu                  t.cpu()                                       new pageable tensor
  copy-pageable        pageable.copy_(t, non_blocking=True)          pageable destination
  copy-pinned          pinned.copy_(t, non_blocking=True) + event    pinned destination (the fix)
  to-nonblocking       t.to("cpu", non_blocking=True) + event        PyTorch allocates it pinned
  copy-pinned-strided  pinned2d[:, :k].copy_(t2d, non_blocking=True) strided view of pinned memory

The copy-pinned and to-nonblocking variants synchronize on a CUDA event recorded after the copy before
the host reads the values (that wait is not part of the copy call). NVTX: `step N` around each step, the
pattern's name around the copy. Prints each pattern's host times: the measurement a trace must match.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

PATTERNS = ["item", "cpu", "copy-pageable", "copy-pinned", "to-nonblocking", "copy-pinned-strided"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backlog-ms", type=float, default=10.0)
    ap.add_argument("--mib", type=float, default=8.0)
    ap.add_argument("--steps", type=int, default=4, help="copies per pattern")
    ap.add_argument("--patterns", default=",".join(PATTERNS))
    ap.add_argument("--json", help="write the host times here")
    args = ap.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("d2h_probe: no CUDA device", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    b, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1_000_000)
    b.record(); torch.cuda._sleep(20_000_000); e.record(); torch.cuda.synchronize()
    cycles = int(20_000_000 / b.elapsed_time(e) * args.backlog_ms)
    n = int(args.mib * 1024 * 1024) // 4
    rows = 4
    t = torch.ones(n, device=dev)
    t2d = torch.ones(rows, n // rows, device=dev)
    pageable = torch.empty(n)
    pinned = torch.empty(n, pin_memory=True)
    pinned2d = torch.empty(rows, n // rows + 1024, pin_memory=True)
    done = torch.cuda.Event()

    def fenced(f):
        def run():
            out = f()
            done.record()
            return out
        return run

    copies = {
        "item": lambda: t[0].item(),
        "cpu": lambda: t.cpu(),
        "copy-pageable": lambda: pageable.copy_(t, non_blocking=True),
        "copy-pinned": fenced(lambda: pinned.copy_(t, non_blocking=True)),
        "to-nonblocking": fenced(lambda: t.to("cpu", non_blocking=True)),
        "copy-pinned-strided": lambda: pinned2d[:, :n // rows].copy_(t2d, non_blocking=True),
    }
    patterns = args.patterns.split(",")
    unknown = [p for p in patterns if p not in copies]
    if unknown:
        print(f"d2h_probe: unknown pattern(s) {', '.join(unknown)}", file=sys.stderr)
        return 2
    for p in patterns:  # warm-up: allocator, pinned pool, kernels
        copies[p]()
    torch.cuda.synchronize()
    results, step = {}, 0
    for p in patterns:
        host_us = []
        for _ in range(args.steps):
            torch.cuda.nvtx.range_push(f"step {step}")
            torch.cuda._sleep(cycles)
            torch.cuda.nvtx.range_push(p)
            t0 = time.perf_counter()
            copies[p]()
            host_us.append((time.perf_counter() - t0) * 1e6)
            torch.cuda.nvtx.range_pop()
            if p in ("copy-pinned", "to-nonblocking"):
                done.synchronize()  # before the host reads the values
            torch.cuda.nvtx.range_pop()
            torch.cuda.synchronize()
            step += 1
        results[p] = host_us
        print(f"d2h_probe pattern={p} backlog_ms={args.backlog_ms} mib={args.mib} "
              f"host_us={' '.join(f'{h:.0f}' for h in host_us)} median_us={statistics.median(host_us):.0f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"backlog_ms": args.backlog_ms, "mib": args.mib, "host_us": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
