#!/usr/bin/env python3
"""H2D copy sweep: how long does a `non_blocking=True` host-to-device copy block the calling thread?

For each payload size, source variant, GPU backlog depth and number of copies in flight, it queues
`torch.cuda._sleep` spin work on the stream (the backlog), then issues the copies back to back, each
inside an NVTX range named

    h2d variant=<name> bytes=<payload> backlog_us=<queued GPU work> inflight=<k> idx=<i> rep=<r>

and times each call with the host clock. It prints a host-timer table on its own; run it under
`nsysh2d profile` to get the same copies in an nsys trace (`nsysh2d threshold` reads those ranges).

Variants (all int64 payloads):
  pinned_contig   contiguous pinned source
  pageable        ordinary CPU tensor
  numpy_from      torch.from_numpy(array) (pageable)
  numpy_pin       torch.from_numpy(array).pin_memory() (pin inside the timed call, as the vLLM fix does)
  pinned_strided  dst[:, :k].copy_(pinned[:, :k]) with pinned of shape [3, n + 1] (vLLM M-RoPE before the fix)
  pinned_rows     the same three rows copied one by one (the fix)
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

KIB = 1024
MIB = 1024 * KIB

# 64 KiB .. 64 MiB, denser between 256 KiB and 8 MiB where the threshold was seen to lie.
DEFAULT_SIZES = [64 * KIB, 128 * KIB, 256 * KIB, 384 * KIB, 512 * KIB, 768 * KIB, 1 * MIB,
                 1536 * KIB, 2 * MIB, 3 * MIB, 4 * MIB, 6 * MIB, 8 * MIB, 16 * MIB, 32 * MIB, 64 * MIB]
VARIANTS = ["pinned_contig", "pageable", "numpy_from", "numpy_pin", "pinned_strided", "pinned_rows"]


def range_name(variant: str, nbytes: int, backlog_us: int, inflight: int, idx: int, rep: int) -> str:
    return (f"h2d variant={variant} bytes={nbytes} backlog_us={backlog_us} "
            f"inflight={inflight} idx={idx} rep={rep}")


def parse_range_name(name: str) -> dict | None:
    """Inverse of range_name; None for any other NVTX text."""
    if not name.startswith("h2d "):
        return None
    out: dict = {}
    for part in name[4:].split():
        key, sep, value = part.partition("=")
        if not sep:
            return None
        out[key] = value if key == "variant" else int(value)
    if {"variant", "bytes", "backlog_us", "inflight", "idx", "rep"} - out.keys():
        return None
    return out


def plan(sizes, variants, backlogs_us, inflights, default_backlog_us, repeats):
    """The (variant, bytes, backlog_us, inflight) cases: every backlog depth with one copy in
    flight, and every in-flight count at the default depth (the full cross product adds little)."""
    cases = []
    for nbytes in sizes:
        for variant in variants:
            combos = {(b, 1) for b in backlogs_us} | {(default_backlog_us, k) for k in inflights}
            for backlog_us, inflight in sorted(combos):
                cases.append((variant, nbytes, backlog_us, inflight))
    return [(c, rep) for c in cases for rep in range(repeats)]


def parse_size(text: str) -> int:
    t = text.strip().lower()
    for suffix, mult in (("kib", KIB), ("mib", MIB), ("k", KIB), ("m", MIB), ("b", 1)):
        if t.endswith(suffix):
            return int(float(t[: -len(suffix)]) * mult)
    return int(t)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES),
                    help="comma-separated payloads (e.g. 64KiB,1MiB); default 64 KiB .. 64 MiB")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--backlogs-ms", default="0,2,10", help="GPU backlog depths queued before each copy")
    ap.add_argument("--default-backlog-ms", type=float, default=10.0,
                    help="backlog used for the in-flight series")
    ap.add_argument("--inflight", default="1,2,4", help="back-to-back copies per measurement")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", metavar="FILE", help="write every timed copy here as JSON")
    args = ap.parse_args(argv)

    import numpy as np
    import torch

    if not torch.cuda.is_available():
        print("h2d_sweep: no CUDA device", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    variants = args.variants.split(",")
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        ap.error(f"unknown variants: {sorted(unknown)}")
    backlogs_us = [int(float(b) * 1000) for b in args.backlogs_ms.split(",")]
    default_backlog_us = int(args.default_backlog_ms * 1000)
    inflights = [int(k) for k in args.inflight.split(",")]

    # Calibrate torch.cuda._sleep: cycles per microsecond of GPU time on this card.
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1_000_000)
    start.record(); torch.cuda._sleep(20_000_000); end.record(); torch.cuda.synchronize()
    cycles_per_us = 20_000_000 / (start.elapsed_time(end) * 1000)

    def make(variant: str, nbytes: int, copies: int):
        """Sources and a copy function for `copies` independent copies of one variant."""
        n = max(1, nbytes // 8)
        fns = []
        for _ in range(copies):
            if variant in ("pinned_strided", "pinned_rows"):
                k = max(1, n // 3)
                src = torch.arange(3 * (k + 1), dtype=torch.int64).reshape(3, k + 1).pin_memory()
                dst = torch.empty((3, k), dtype=torch.int64, device=dev)
                if variant == "pinned_strided":
                    fns.append(lambda d=dst, s=src, k=k: d.copy_(s[:, :k], non_blocking=True))
                else:
                    def rows(d=dst, s=src, k=k):
                        for r in range(3):
                            d[r].copy_(s[r, :k], non_blocking=True)
                    fns.append(rows)
                continue
            dst = torch.empty((n,), dtype=torch.int64, device=dev)
            if variant == "pinned_contig":
                src = torch.arange(n, dtype=torch.int64).pin_memory()
                fns.append(lambda d=dst, s=src: d.copy_(s, non_blocking=True))
            elif variant == "pageable":
                src = torch.arange(n, dtype=torch.int64)
                fns.append(lambda d=dst, s=src: d.copy_(s, non_blocking=True))
            elif variant == "numpy_from":
                arr = np.arange(n, dtype=np.int64)
                fns.append(lambda d=dst, a=arr: d.copy_(torch.from_numpy(a), non_blocking=True))
            elif variant == "numpy_pin":
                arr = np.arange(n, dtype=np.int64)
                fns.append(lambda d=dst, a=arr: d.copy_(torch.from_numpy(a).pin_memory(), non_blocking=True))
        return fns

    records = []
    for (variant, nbytes, backlog_us, inflight), rep in plan(
            sizes, variants, backlogs_us, inflights, default_backlog_us, args.repeats):
        fns = make(variant, nbytes, inflight)
        for fn in fns:  # warm-up outside any range: allocator and driver first-touch costs
            fn()
        torch.cuda.synchronize()
        if backlog_us:
            torch.cuda._sleep(int(backlog_us * cycles_per_us))
        t_issue = time.perf_counter_ns()
        for idx, fn in enumerate(fns):
            torch.cuda.nvtx.range_push(range_name(variant, nbytes, backlog_us, inflight, idx, rep))
            t0 = time.perf_counter_ns()
            fn()
            t1 = time.perf_counter_ns()
            torch.cuda.nvtx.range_pop()
            records.append({"variant": variant, "bytes": nbytes, "backlog_us": backlog_us,
                            "inflight": inflight, "idx": idx, "rep": rep,
                            "host_us": (t1 - t0) / 1e3, "since_issue_us": (t1 - t_issue) / 1e3})
        torch.cuda.synchronize()
        del fns

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cycles_per_us": cycles_per_us, "device": torch.cuda.get_device_name(),
                       "torch": torch.__version__, "records": records}, f)

    print(f"# device={torch.cuda.get_device_name()} torch={torch.__version__} "
          f"sleep_cycles_per_us={cycles_per_us:.0f}")
    for backlog_us in backlogs_us:
        print_table(records, variants, sizes, backlog_us, 1)
    for k in inflights:
        if k != 1:
            print_table(records, variants, sizes, default_backlog_us, k)
    return 0


def print_table(records, variants, sizes, backlog_us, inflight):
    """Median host time (us) of the slowest copy of each measurement, per size and variant."""
    print(f"\n## host time per call, us (median over repeats of the slowest of {inflight} in flight), "
          f"backlog {backlog_us / 1000:g} ms")
    print("bytes".rjust(10), *[v.rjust(15) for v in variants])
    for nbytes in sizes:
        cells = []
        for v in variants:
            per_rep: dict[int, float] = {}
            for r in records:
                if (r["variant"], r["bytes"], r["backlog_us"], r["inflight"]) == (v, nbytes, backlog_us, inflight):
                    per_rep[r["rep"]] = max(per_rep.get(r["rep"], 0.0), r["host_us"])
            cells.append(f"{statistics.median(per_rep.values()):15.1f}" if per_rep else " " * 14 + "-")
        print(str(nbytes).rjust(10), *cells)


if __name__ == "__main__":
    sys.exit(main())
