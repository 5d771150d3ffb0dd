#!/usr/bin/env python3
"""Each reason a host-side CUDA call is long, reproduced alone (issue 40), with host timers as the truth.

One NVTX range per case, `cause <name>`, each case --repeats times, the GPU drained between cases (outside
the ranges) so that no case inherits another's queue:
- backlog: a --head-ms kernel, then an 8 MiB pageable `copy_(non_blocking=True)`: the copy waits for the
  kernel (its staging buffer is used only once the queue ahead has drained; docs/why-non-blocking-blocks.md).
- launch_queue: a --head-ms kernel, then --fill 2 MiB *pinned* copies behind it. A stream holds 1021 items
  behind the running one; the copy that finds it full waits for the head kernel to end, although a pinned
  copy never waits on its own. The GPU work queued ahead of it (head + 1021 copies) is far longer than
  what it waited, so it did not wait for the backlog but for a slot.
- own_transfer: an idle GPU, then a --big-mib pageable copy: the call lasts as long as its own transfer
  (the driver stages it chunk by chunk); nothing was queued ahead.
- host_allocation: a --head-ms kernel holds the stream, then `.pin_memory()` of fresh --pin-mib tensors,
  each copied to the device (non_blocking). The caching host allocator cannot hand back a block whose
  copy is still queued, so every `.pin_memory()` grows the cache: `cudaHostAlloc` pins new pages on the
  host (the growth cost of the `after` fix of the Qwen3-VL vision position ids). Then, with the GPU
  drained, the same `.pin_memory()` calls again (`pin reuse`, outside the cause ranges): the cache hands
  back its blocks, no allocation; the difference is the growth cost.

Prints one line per timed call and (--json FILE) every call's host time: the independent truth that the
trace's per-call cause (`nsysh2d analyze`, JSON `top[].cause`, the `by cause` table) must match.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

CAUSES = ("backlog", "launch_queue", "own_transfer", "host_allocation")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--head-ms", type=float, default=10.0, help="the kernel that holds the stream")
    ap.add_argument("--fill", type=int, default=1100, help="launch_queue: 2 MiB pinned copies queued behind the head")
    ap.add_argument("--big-mib", type=int, default=256, help="own_transfer: the pageable copy's size")
    ap.add_argument("--pin-mib", type=int, default=64, help="host_allocation: each .pin_memory()'s size")
    ap.add_argument("--pins", type=int, default=4, help="host_allocation: .pin_memory() calls per repeat")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cases", default=",".join(CAUSES))
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("cause_probe: no CUDA device", file=sys.stderr)
        return 2
    cases = [c for c in args.cases.split(",") if c]
    if any(c not in CAUSES for c in cases):
        print(f"cause_probe: --cases takes {','.join(CAUSES)}", file=sys.stderr)
        return 2
    from gpu_clock import sleep_cycles_per_us

    nvtx = torch.cuda.nvtx
    cycles_per_us = sleep_cycles_per_us(torch)
    head = int(args.head_ms * 1000 * cycles_per_us)
    mib = 1024 * 1024
    pageable8 = torch.ones(8 * mib // 4)
    dst8 = torch.empty(8 * mib // 4, device="cuda")
    pinned2 = torch.ones(2 * mib // 4).pin_memory()
    dst2 = torch.empty(2 * mib // 4, device="cuda")
    small_pinned = torch.ones(1024).pin_memory()
    small_dst = torch.empty(1024, device="cuda")
    big = torch.ones(args.big_mib * mib // 4)
    big_dst = torch.empty(args.big_mib * mib // 4, device="cuda")
    pin_src = [torch.full((args.pin_mib * mib // 4,), float(i)) for i in range(args.pins)]
    pin_dst = torch.empty(args.pin_mib * mib // 4, device="cuda")
    torch.cuda.synchronize()
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "args": vars(args), "calls": []}

    def timed(case: str, rep: int, what: str, fn) -> float:
        t0 = time.perf_counter()
        fn()
        us = (time.perf_counter() - t0) * 1e6
        out["calls"].append({"case": case, "rep": rep, "call": what, "host_us": us})
        return us

    for rep in range(args.repeats):
        for case in cases:
            torch.cuda.synchronize()
            nvtx.range_push(f"cause {case}")
            if case == "backlog":
                torch.cuda._sleep(head)
                us = timed(case, rep, "pageable_copy_8MiB", lambda: dst8.copy_(pageable8, non_blocking=True))
                note = f"pageable 8 MiB copy behind {args.head_ms:g} ms: {us:.0f} us"
            elif case == "launch_queue":
                torch.cuda._sleep(head)
                fills = [timed(case, rep, "pinned_copy_2MiB", lambda: dst2.copy_(pinned2, non_blocking=True))
                         for _ in range(args.fill)]
                us = timed(case, rep, "pinned_copy_4KiB", lambda: small_dst.copy_(small_pinned, non_blocking=True))
                first = next((i for i, t in enumerate(fills) if t > 0.25 * args.head_ms * 1000), None)
                note = (f"first waiting fill copy: #{first} ({fills[first]:.0f} us)" if first is not None
                        else "no fill copy waited") + f"; then a 4 KiB pinned copy: {us:.0f} us"
            elif case == "own_transfer":
                us = timed(case, rep, f"pageable_copy_{args.big_mib}MiB", lambda: big_dst.copy_(big, non_blocking=True))
                note = f"pageable {args.big_mib} MiB copy, idle GPU: {us:.0f} us"
            else:
                torch.cuda._sleep(head)
                pins = []
                for i in range(args.pins):
                    holder = {}
                    pins.append(timed(case, rep, "pin_memory_grow",
                                      lambda: holder.setdefault("t", pin_src[i].pin_memory())))
                    pin_dst.copy_(holder["t"], non_blocking=True)
                note = "pin_memory growing the cache: " + " ".join(f"{x:.0f}" for x in pins) + " us"
            nvtx.range_pop()
            if case == "host_allocation":
                torch.cuda.synchronize()   # the blocks are free again: the same calls now reuse the cache
                nvtx.range_push("pin reuse")
                reuse = [timed("pin_reuse", rep, "pin_memory_reuse", lambda: pin_src[i].pin_memory())
                         for i in range(args.pins)]
                nvtx.range_pop()
                note += "; reusing it: " + " ".join(f"{x:.0f}" for x in reuse) + " us"
            print(f"cause_probe rep={rep} case={case}: {note}", flush=True)
    torch.cuda.synchronize()
    by = {}
    for c in out["calls"]:
        by.setdefault((c["case"], c["call"]), []).append(c["host_us"])
    for (case, call), us in by.items():
        print(f"cause_probe {case} {call}: calls={len(us)} median_us={statistics.median(us):.0f} max_us={max(us):.0f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
