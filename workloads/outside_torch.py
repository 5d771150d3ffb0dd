#!/usr/bin/env python3
"""Copies made outside PyTorch next to one made through it (issue 58): under `nsysh2d profile` (the copy hook on),
the PyTorch copy gets its call site and class from the hook, and the others, made by CuPy (cupy.asarray of a
numpy array, a copy from pageable memory) and through the CUDA runtime with ctypes, are reported without a site,
saying why. Each copy runs behind --backlog-ms of queued GPU work, inside an NVTX range naming who made it."""
from __future__ import annotations

import argparse
import ctypes
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mib", type=int, default=8)
    ap.add_argument("--backlog-ms", type=float, default=10.0)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    import numpy as np
    import torch
    from gpu_clock import sleep_cycles_per_us

    if not torch.cuda.is_available():
        print("needs a CUDA GPU", file=sys.stderr)
        return 2
    cycles = int(args.backlog_ms * 1000 * sleep_cycles_per_us(torch))
    n = args.mib * 1024 * 1024 // 8
    host = np.arange(n, dtype=np.int64)
    try:
        import cupy
    except ImportError:
        cupy = None
    cudart = None
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            cudart = ctypes.CDLL(name)
            break
        except OSError:
            continue
    dst = torch.empty(n, dtype=torch.int64, device="cuda")
    made = []
    for _ in range(args.repeats):
        torch.cuda._sleep(cycles)
        with torch.cuda.nvtx.range("made by torch"):
            dst.copy_(torch.from_numpy(host), non_blocking=True)
        made.append("torch")
        if cupy is not None:
            torch.cuda.synchronize()
            torch.cuda._sleep(cycles)
            with torch.cuda.nvtx.range("made by cupy"):
                with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
                    cupy.asarray(host)
            made.append("cupy")
        if cudart is not None:
            torch.cuda.synchronize()
            torch.cuda._sleep(cycles)
            with torch.cuda.nvtx.range("made by cudart"):
                rc = cudart.cudaMemcpyAsync(ctypes.c_void_p(dst.data_ptr()), ctypes.c_void_p(host.ctypes.data),
                                            ctypes.c_size_t(n * 8), 1, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
            made.append(f"cudart rc={rc}")
        torch.cuda.synchronize()
    print("copies made:", ", ".join(made))
    return 0


if __name__ == "__main__":
    sys.exit(main())
