#!/usr/bin/env python3
"""The same pageable copy behind eager kernels and behind a CUDA graph replay (issue 13.4).

Each step queues about --backlog-ms of GPU work on the current stream — eagerly (`torch.cuda._sleep`
kernels) or as one replay of a CUDA graph holding the same kernels — then makes one pageable
`non_blocking=True` copy of --mib MiB and times that call on the host. NVTX: `step N` around each step,
`copy` around the copy. Prints the host time of each copy and their median: the host timer that a
trace's backlog behind a graph replay must match.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", choices=["eager", "graph"], default="eager")
    ap.add_argument("--backlog-ms", type=float, default=10.0)
    ap.add_argument("--kernels", type=int, default=4, help="kernels that make up the backlog")
    ap.add_argument("--mib", type=float, default=8.0)
    ap.add_argument("--steps", type=int, default=8)
    args = ap.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("graph_probe: no CUDA device", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1_000_000)
    start.record(); torch.cuda._sleep(20_000_000); end.record(); torch.cuda.synchronize()
    cycles = int(20_000_000 / start.elapsed_time(end) * args.backlog_ms / args.kernels)

    def work():
        for _ in range(args.kernels):
            torch.cuda._sleep(cycles)

    replay = work
    if args.variant == "graph":
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            work()  # warm-up outside capture
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            work()
        replay = g.replay
    src = torch.ones(int(args.mib * 1024 * 1024) // 4, dtype=torch.float32)  # pageable
    dst = torch.empty_like(src, device=dev)
    torch.cuda.synchronize()
    host_us = []
    for i in range(args.steps):
        torch.cuda.nvtx.range_push(f"step {i}")
        replay()
        torch.cuda.nvtx.range_push("copy")
        t0 = time.perf_counter()
        dst.copy_(src, non_blocking=True)
        host_us.append((time.perf_counter() - t0) * 1e6)
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
    print(f"graph_probe variant={args.variant} backlog_ms={args.backlog_ms} mib={args.mib} "
          f"host_us={' '.join(f'{h:.0f}' for h in host_us)} median_us={statistics.median(host_us):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
