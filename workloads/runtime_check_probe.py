#!/usr/bin/env python3
"""Does what the runtime checker flags really block? (issue 18) On a GPU: each layout of an 8 MiB copy with
non_blocking=True, behind --backlog-ms of queued `torch.cuda._sleep`, timed on the host while the checker
(nsysh2d.checker.runtime.Checker) watches. Prints a Markdown table: the checker's class and verdict next to the
measured host time, and whether the two agree (flagged ⇔ the call lasted at least half the backlog;
not flagged ⇔ it returned in < 0.5 ms).

--rewrites (issue 40): the checker's in-flight rule against what the GPU really read. A pinned 8 MiB buffer of
ones is copied with non_blocking=True behind the backlog, then written (or not) before the copy ran; after a
synchronize the device copy tells whether the GPU read the new values: the race, measured. The checker must
flag exactly the writes that raced, except writes through `.numpy()`, which it cannot see (said in the row).
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
    ap.add_argument("--rewrites", action="store_true", help="time the in-flight write rule instead (see above)")
    args = ap.parse_args(argv)

    import numpy as np
    import torch

    from nsysh2d.checker.runtime import Checker

    if not torch.cuda.is_available():
        print("runtime_check_probe: no CUDA device", file=sys.stderr)
        return 2
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1_000_000)
    start.record(); torch.cuda._sleep(20_000_000); end.record(); torch.cuda.synchronize()
    cycles = int(20_000_000 / start.elapsed_time(end) * args.backlog_ms)
    if args.rewrites:
        return rewrites(torch, Checker, cycles, args)
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


def rewrites(torch, Checker, cycles: int, args) -> int:
    n = args.mib * 1024 * 1024 // 4

    def after_event(b, ev):
        ev.synchronize()
        b.fill_(2.0)

    cases = {   # name: (what is done after the copy is queued, can the checker see it)
        "fill_ while in flight": (lambda b, ev: b.fill_(2.0), True),
        "slice copy_ while in flight": (lambda b, ev: b[: n // 2].copy_(torch.full((n // 2,), 2.0)), True),
        "write through .numpy() while in flight": (lambda b, ev: b.numpy().__setitem__(slice(None), 2.0), False),
        "fill_ after event.synchronize()": (after_event, True),
        "fill_ another pinned buffer": (lambda b, ev: other.fill_(2.0), True),
    }
    other = torch.ones(n).pin_memory()
    out = []
    for name, (write, visible) in cases.items():
        raced, flagged = [], []
        for _ in range(args.repeats):
            buf = torch.ones(n).pin_memory()
            torch.cuda.synchronize()
            torch.cuda._sleep(cycles)
            with Checker() as chk:
                dev = buf.to("cuda", non_blocking=True)
                ev = torch.cuda.Event()
                ev.record()
                write(buf, ev)
            torch.cuda.synchronize()
            raced.append(bool((dev != 1).any().item()))   # the GPU read a value written after the copy call
            flagged.append(bool(chk.rewrites))
        agrees = flagged == raced if visible else not any(flagged)
        out.append({"case": name, "repeats": args.repeats, "gpu_read_new_values": sum(raced),
                    "flagged": sum(flagged), "visible_to_checker": visible, "agrees": agrees})
    print(f"device={torch.cuda.get_device_name()} torch={torch.__version__} backlog_ms={args.backlog_ms} "
          f"payload={args.mib} MiB repeats={args.repeats}")
    print("| write after the non_blocking copy | GPU read the new values | checker flagged | agrees |")
    print("|---|---:|---:|---|")
    for r in out:
        note = "" if r["visible_to_checker"] else " (not visible to the dispatcher)"
        print(f"| {r['case']} | {r['gpu_read_new_values']}/{r['repeats']} | {r['flagged']}/{r['repeats']} | "
              f"{'yes' if r['agrees'] else 'NO'}{note} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0 if all(r["agrees"] for r in out) else 1


if __name__ == "__main__":
    sys.exit(main())
