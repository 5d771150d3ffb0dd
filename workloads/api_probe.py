#!/usr/bin/env python3
"""H2D copies through every copy API behind the same GPU backlog (issue 13.3).

Each step queues about --backlog-ms of `torch.cuda._sleep` kernels on the default stream, then makes one
--mib MiB host-to-device copy through one API and times that call on the host:

  torch-async-pageable   tensor.copy_(pageable, non_blocking=True)   -> cudaMemcpyAsync
  torch-async-pinned     tensor.copy_(pinned, non_blocking=True)     -> cudaMemcpyAsync
  rt-sync-pageable       cudaMemcpy from pageable memory (ctypes into the runtime torch loaded)
  rt-sync-pinned         cudaMemcpy from pinned memory
  drv-sync-pageable      cuMemcpyHtoD_v2 from pageable memory (ctypes into libcuda)
  drv-async-pageable     cuMemcpyHtoDAsync_v2 from pageable memory
  drv-async-pinned       cuMemcpyHtoDAsync_v2 from pinned memory

NVTX: `step N` around each step, the API's name around the copy. Prints one line per API with the host
times of its copies: the independent measurement a trace's figures for these APIs must match.
"""
from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import time

APIS = ["torch-async-pageable", "torch-async-pinned", "rt-sync-pageable", "rt-sync-pinned", "drv-sync-pageable",
        "drv-async-pageable", "drv-async-pinned"]


def _runtime_library() -> ctypes.CDLL:
    """The CUDA runtime torch itself loaded (a second copy would have its own state)."""
    with open("/proc/self/maps") as maps:
        paths = sorted({line.split()[-1] for line in maps if "libcudart.so" in line})
    for path in paths + ["libcudart.so"]:
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    raise SystemExit("api_probe: no CUDA runtime library found in the process")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backlog-ms", type=float, default=10.0)
    ap.add_argument("--kernels", type=int, default=1,
                    help="kernels that make up the backlog (thousands fill the driver's launch queue)")
    ap.add_argument("--mib", type=float, default=8.0)
    ap.add_argument("--steps", type=int, default=4, help="copies per API")
    ap.add_argument("--apis", default=",".join(APIS))
    args = ap.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("api_probe: no CUDA device", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    n = int(args.mib * 1024 * 1024)
    pageable = torch.ones(n, dtype=torch.uint8)
    pinned = torch.ones(n, dtype=torch.uint8).pin_memory()
    dst = torch.empty(n, dtype=torch.uint8, device=dev)
    torch.cuda.synchronize()
    rt = _runtime_library()
    drv = ctypes.CDLL("libcuda.so.1")
    rt.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    drv.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t]
    drv.cuMemcpyHtoDAsync_v2.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

    def check(rc, what):
        if rc != 0:
            raise SystemExit(f"api_probe: {what} returned {rc}")

    copies = {
        "torch-async-pageable": lambda: dst.copy_(pageable, non_blocking=True),
        "torch-async-pinned": lambda: dst.copy_(pinned, non_blocking=True),
        "rt-sync-pageable": lambda: check(rt.cudaMemcpy(dst.data_ptr(), pageable.data_ptr(), n, 1), "cudaMemcpy"),
        "rt-sync-pinned": lambda: check(rt.cudaMemcpy(dst.data_ptr(), pinned.data_ptr(), n, 1), "cudaMemcpy"),
        "drv-sync-pageable": lambda: check(drv.cuMemcpyHtoD_v2(dst.data_ptr(), pageable.data_ptr(), n),
                                           "cuMemcpyHtoD_v2"),
        "drv-async-pageable": lambda: check(drv.cuMemcpyHtoDAsync_v2(dst.data_ptr(), pageable.data_ptr(), n, stream),
                                            "cuMemcpyHtoDAsync_v2"),
        "drv-async-pinned": lambda: check(drv.cuMemcpyHtoDAsync_v2(dst.data_ptr(), pinned.data_ptr(), n, stream),
                                          "cuMemcpyHtoDAsync_v2"),
    }
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1_000_000)
    start.record(); torch.cuda._sleep(20_000_000); end.record(); torch.cuda.synchronize()
    cycles = int(20_000_000 / start.elapsed_time(end) * args.backlog_ms / args.kernels)

    step = 0
    for api in args.apis.split(","):
        host_us = []
        for _ in range(args.steps):
            torch.cuda.nvtx.range_push(f"step {step}")
            for _ in range(args.kernels):
                torch.cuda._sleep(cycles)
            torch.cuda.nvtx.range_push(api)
            t0 = time.perf_counter()
            copies[api]()
            host_us.append((time.perf_counter() - t0) * 1e6)
            torch.cuda.nvtx.range_pop()
            torch.cuda.nvtx.range_pop()
            torch.cuda.synchronize()
            step += 1
        print(f"api_probe api={api} backlog_ms={args.backlog_ms} kernels={args.kernels} mib={args.mib} "
              f"host_us={' '.join(f'{h:.0f}' for h in host_us)} median_us={statistics.median(host_us):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
