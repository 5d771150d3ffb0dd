#!/usr/bin/env python3
"""How deep is the launch queue, and what waits when it is full? (issue 40)

One long "head" kernel (--head-ms of `torch.cuda._sleep`) holds the stream; then --kernels short kernels
(--kernel-us each) are launched one by one and every launch is timed on the host. While the queue has room a
launch returns in microseconds; the first launch that finds it full waits until the head kernel ends, and
every later one waits for a short kernel to finish. The index of that first long launch is the number of
launches the queue took: its depth for this stream, measured.

--fill-with pinned_copies fills it with 4 KiB pinned copies instead (do copies share the kernels' queue?).

Then, for each N in --probe-at (default: around the measured depth), the same head + N short kernels are
queued and one call is timed after them: a 4 KiB pinned `copy_(non_blocking=True)` (cudaMemcpyAsync from
pinned memory, which never waits for the stream on its own), a kernel launch, and a 4 KiB pageable copy. With N
below the depth the pinned copy and the launch return at once; at or above it they wait like a launch.

NVTX: `head`, `fill N`, and the timed call's name (`pinned_copy`, `launch`, `pageable_copy`) around each call.
Prints one line per measurement (and --json FILE): the independent truth for a trace's launch-queue verdicts.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--head-ms", type=float, default=200.0, help="the kernel that holds the stream while it fills")
    ap.add_argument("--kernel-us", type=float, default=100.0, help="each short kernel's GPU time")
    ap.add_argument("--kernels", type=int, default=4096, help="short kernels launched behind the head")
    ap.add_argument("--fill-with", choices=["kernels", "pinned_copies"], default="kernels",
                    help="what fills the queue behind the head: short kernels, or 4 KiB pinned H2D copies")
    ap.add_argument("--probe-at", default="", help="N values for the timed calls (default: depth-16..depth+16)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("launch_queue: no CUDA device", file=sys.stderr)
        return 2
    from gpu_clock import sleep_cycles_per_us

    nvtx = torch.cuda.nvtx
    cycles_per_us = sleep_cycles_per_us(torch)
    head = int(args.head_ms * 1000 * cycles_per_us)
    short = int(args.kernel_us * cycles_per_us)
    pinned = torch.ones(512, dtype=torch.int64).pin_memory()
    pageable = torch.ones(512, dtype=torch.int64)
    dst = torch.empty(512, dtype=torch.int64, device="cuda")
    fill_dst = torch.empty(512, dtype=torch.int64, device="cuda")
    torch.cuda.synchronize()
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cycles_per_us": cycles_per_us,
           "args": vars(args), "fills": [], "probes": []}

    def fill(n: int) -> list[float]:
        """head + n short kernels; the host time of each short launch in us."""
        nvtx.range_push("head")
        torch.cuda._sleep(head)
        nvtx.range_pop()
        nvtx.range_push(f"fill {n}")
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            if args.fill_with == "kernels":
                torch.cuda._sleep(short)
            else:
                fill_dst.copy_(pinned, non_blocking=True)
            times.append((time.perf_counter() - t0) * 1e6)
        nvtx.range_pop()
        return times

    depths = []
    for rep in range(args.repeats):
        times = fill(args.kernels)
        torch.cuda.synchronize()
        # The first launch that waited for the head kernel: far longer than any launch with room.
        cut = 0.25 * args.head_ms * 1000
        first = next((i for i, t in enumerate(times) if t > cut), None)
        depths.append(first)
        after = times[first + 1:first + 65] if first is not None else []
        out["fills"].append({"rep": rep, "first_waiting_launch": first,
                             "wait_us": times[first] if first is not None else None,
                             "median_launch_us_before": statistics.median(times[:first or len(times)]),
                             "median_launch_us_after": statistics.median(after) if after else None})
        print(f"launch_queue fill rep={rep} kernels={args.kernels} first_waiting_launch={first} "
              f"wait_us={times[first] if first is not None else 0:.0f} "
              f"launch_us_before={statistics.median(times[:first or len(times)]):.1f} "
              f"launch_us_after={statistics.median(after) if after else 0:.1f}", flush=True)
    known = [d for d in depths if d is not None]
    depth = statistics.median(known) if known else None
    if args.probe_at:
        probe_at = [int(x) for x in args.probe_at.split(",") if x]
    elif depth is not None:
        d = int(depth)
        probe_at = [max(0, d + k) for k in (-64, -16, -4, -1, 0, 1, 4, 16)]
    else:
        probe_at = []
    calls = {
        "pinned_copy": lambda: dst.copy_(pinned, non_blocking=True),
        "launch": lambda: torch.cuda._sleep(short),
        "pageable_copy": lambda: dst.copy_(pageable, non_blocking=True),
    }
    for n in probe_at:
        for name, call in calls.items():
            host = []
            for _ in range(args.repeats):
                fill(n)
                nvtx.range_push(name)
                t0 = time.perf_counter()
                call()
                host.append((time.perf_counter() - t0) * 1e6)
                nvtx.range_pop()
                torch.cuda.synchronize()
            out["probes"].append({"queued": n, "call": name, "host_us": host})
            print(f"launch_queue probe queued={n} call={name} host_us=" + " ".join(f"{x:.0f}" for x in host)
                  + f" median_us={statistics.median(host):.0f}", flush=True)
    print(f"launch_queue depth={depth} (first waiting launch per repeat: {depths}) device={out['device']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
