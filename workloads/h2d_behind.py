#!/usr/bin/env python3
"""Does a small pageable H2D copy block when a larger pageable copy is still in flight?

Behind `--backlog-ms` of queued GPU work, issue one pageable `non_blocking=True` copy of LEAD bytes
(0 = none), then the measured pageable copy of SMALL bytes (default 64 KiB: the vLLM vision position ids
of one 1024x1024 image), and time the second call on the host. Each pair sits in an NVTX range
`behind lead=L small=S rep=R`. Prints the median host time per (lead, small).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

KIB, MIB = 1024, 1024 * 1024


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--leads", default="0,64K,256K,512K,1M,1536K,2M,3M")
    ap.add_argument("--smalls", default="64K,16K")
    ap.add_argument("--backlog-ms", type=float, default=10.0)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)

    def size(t):
        t = t.strip().upper()
        return int(float(t[:-1]) * (KIB if t.endswith("K") else MIB)) if t[-1] in "KM" else int(t)

    import torch

    if not torch.cuda.is_available():
        print("h2d_behind: no CUDA device", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1_000_000)
    start.record(); torch.cuda._sleep(20_000_000); end.record(); torch.cuda.synchronize()
    cycles_per_us = 20_000_000 / (start.elapsed_time(end) * 1000)
    leads = [size(x) for x in args.leads.split(",")]
    smalls = [size(x) for x in args.smalls.split(",")]
    print(f"# device={torch.cuda.get_device_name()} torch={torch.__version__} backlog={args.backlog_ms} ms")
    print("lead_bytes".rjust(11), *[f"small={s}".rjust(16) for s in smalls], "  (median host us of the small copy)")
    for lead in leads:
        cells = []
        for small in smalls:
            src_l = torch.arange(max(1, lead // 8), dtype=torch.int64)
            dst_l = torch.empty_like(src_l, device=dev)
            src_s = torch.arange(small // 8, dtype=torch.int64)
            dst_s = torch.empty_like(src_s, device=dev)
            dst_l.copy_(src_l, non_blocking=True); dst_s.copy_(src_s, non_blocking=True); torch.cuda.synchronize()
            times = []
            for rep in range(args.repeats):
                torch.cuda._sleep(int(args.backlog_ms * 1000 * cycles_per_us))
                torch.cuda.nvtx.range_push(f"behind lead={lead} small={small} rep={rep}")
                if lead:
                    dst_l.copy_(src_l, non_blocking=True)
                t0 = time.perf_counter_ns()
                dst_s.copy_(src_s, non_blocking=True)
                times.append((time.perf_counter_ns() - t0) / 1e3)
                torch.cuda.nvtx.range_pop()
                torch.cuda.synchronize()
            cells.append(f"{statistics.median(times):16.1f}")
        print(str(lead).rjust(11), *cells)
    return 0


if __name__ == "__main__":
    sys.exit(main())
