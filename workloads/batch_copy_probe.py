#!/usr/bin/env python3
"""Does `cudaMemcpyBatchAsync` (CUDA 12.8+) let a copy from pageable memory return without waiting for the GPU
work queued ahead of it? (issue 58: a fix that would need no pinning)

For each size, it queues --backlog-ms of `torch.cuda._sleep` on the current stream, then times one host-to-device
copy with the host clock, by each method:
  memcpy_pageable   `dst.copy_(pageable, non_blocking=True)` (PyTorch: cudaMemcpyAsync from pageable memory)
  memcpy_pinned     the same from a pinned source (the reference: returns at once)
  batch_stream      cuMemcpyBatchAsync, srcAccessOrder STREAM (source read in stream order, as cudaMemcpyAsync)
  batch_during_api  srcAccessOrder DURING_API_CALL (read out of stream order, before the call returns)
  batch_any         srcAccessOrder ANY (read out of stream order, possibly after the call returns)
through the driver API (libcuda.so.1; `cuMemcpyBatchAsync_v2`, else the 12.8 form with failIdx), on PyTorch's
stream. After each copy it synchronizes and checks the bytes on the GPU equal the source (a method that returned
early must still have copied the right data). Prints a table of median host microseconds; --json writes every run.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import sys
import time

ORDERS = {"batch_stream": 1, "batch_during_api": 2, "batch_any": 3}   # CU_MEMCPY_SRC_ACCESS_ORDER_*
LOC_DEVICE, LOC_HOST = 1, 2                                              # CU_MEM_LOCATION_TYPE_*


class MemLocation(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class MemcpyAttributes(ctypes.Structure):
    _fields_ = [("srcAccessOrder", ctypes.c_int), ("srcLocHint", MemLocation), ("dstLocHint", MemLocation),
                ("flags", ctypes.c_uint)]


def batch_fn():
    """(call(dst_ptr, src_ptr, nbytes, order, stream) -> CUresult, the symbol used), or (None, why)."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return None, f"no libcuda.so.1 ({e})"
    size_t, vp = ctypes.c_size_t, ctypes.c_void_p
    for name, with_fail in (("cuMemcpyBatchAsync_v2", False), ("cuMemcpyBatchAsync", True)):
        fn = getattr(cuda, name, None)
        if fn is None:
            continue
        fn.restype = ctypes.c_int

        def call(dst, src, nbytes, order, stream, hints=(LOC_HOST, LOC_DEVICE), fn=fn, with_fail=with_fail):
            dsts, srcs, sizes = (ctypes.c_uint64 * 1)(dst), (ctypes.c_uint64 * 1)(src), (size_t * 1)(nbytes)
            attrs = (MemcpyAttributes * 1)(MemcpyAttributes(order, MemLocation(hints[0], 0), MemLocation(hints[1], 0), 0))
            idxs, fail = (size_t * 1)(0), size_t(0)
            args = [dsts, srcs, sizes, size_t(1), attrs, idxs, size_t(1)]
            if with_fail:
                args.append(ctypes.byref(fail))
            return fn(*args, vp(stream))
        return call, name
    return None, "the driver exports no cuMemcpyBatchAsync"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes-mib", default="1,3,8")
    ap.add_argument("--backlog-ms", type=float, default=20.0)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--json")
    args = ap.parse_args()
    import torch
    from gpu_clock import sleep_cycles_per_us

    if not torch.cuda.is_available():
        print("needs a CUDA GPU", file=sys.stderr)
        return 2
    call, symbol = batch_fn()
    cycles = int(args.backlog_ms * 1000 * sleep_cycles_per_us(torch))
    # The batch API refuses the legacy default stream: every method runs on one created stream.
    stream = torch.cuda.Stream()
    torch.cuda.set_stream(stream)
    hints = (LOC_HOST, LOC_DEVICE)
    if call:   # which location hints the driver takes (they are ignored for pageable memory, but must be valid)
        probe_src, probe_dst = torch.ones(16, dtype=torch.int64), torch.empty(16, dtype=torch.int64, device="cuda")
        tried = {}
        for h in ((LOC_HOST, LOC_DEVICE), (0, 0), (0, LOC_DEVICE), (LOC_HOST, 0)):
            tried[str(h)] = call(probe_dst.data_ptr(), probe_src.data_ptr(), 128, ORDERS["batch_stream"], stream.cuda_stream, h)
            if tried[str(h)] == 0:
                hints = h
                break
        torch.cuda.synchronize()
        print(f"# location hints tried (CUresult): {tried}")
    methods = ["memcpy_pageable", "memcpy_pinned"] + (list(ORDERS) if call else [])
    runs, errors = [], {}
    for mib in [float(s) for s in args.sizes_mib.split(",")]:
        n = int(mib * 1024 * 1024) // 8
        for rep in range(args.repeats):
            for m in methods:   # interleaved: each repeat runs every method once
                src = torch.randint(0, 1 << 40, (n,), dtype=torch.int64)
                if m == "memcpy_pinned":
                    src = src.pin_memory()
                dst = torch.empty(n, dtype=torch.int64, device="cuda")
                torch.cuda.synchronize()
                torch.cuda._sleep(cycles)
                t0 = time.perf_counter_ns()
                if m.startswith("memcpy"):
                    dst.copy_(src, non_blocking=True)
                    rc = 0
                else:
                    rc = call(dst.data_ptr(), src.data_ptr(), n * 8, ORDERS[m], stream.cuda_stream, hints)
                t1 = time.perf_counter_ns()
                torch.cuda.synchronize()
                t2 = time.perf_counter_ns()
                ok = rc == 0 and bool(torch.equal(dst.cpu(), src))
                if rc:
                    errors[m] = rc
                runs.append({"method": m, "mib": mib, "rep": rep, "host_us": (t1 - t0) / 1000,
                             "until_done_us": (t2 - t0) / 1000, "rc": rc, "correct": ok})
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name()}, backlog {args.backlog_ms} ms, "
          f"driver symbol: {symbol}; errors: {errors or 'none'}")
    print("method".ljust(18) + "".join(f"{s + ' MiB':>12}" for s in args.sizes_mib.split(",")) + "   correct")
    for m in methods:
        cells, ok = [], all(r["correct"] for r in runs if r["method"] == m)
        for mib in [float(s) for s in args.sizes_mib.split(",")]:
            xs = [r["host_us"] for r in runs if r["method"] == m and r["mib"] == mib and r["rc"] == 0]
            cells.append(f"{statistics.median(xs):12.1f}" if xs else f"{'error':>12}")
        print(m.ljust(18) + "".join(cells) + f"   {ok}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"symbol": symbol, "hints": hints, "backlog_ms": args.backlog_ms, "gpu": torch.cuda.get_device_name(),
                       "torch": torch.__version__, "errors": errors, "runs": runs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
