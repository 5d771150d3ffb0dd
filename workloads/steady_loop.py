#!/usr/bin/env python3
"""A training-style loop as a plain `with torch.profiler.profile():` captures it (issue 56): no step ranges, init
copies before the loop, and a fix that adds a pinned allocation inside the function it fixes.

  init      a pinned staging pool allocated once (cudaHostAlloc: --init-pin-mb), then the model's weights copied
            with `model.to(dev)` (many small pageable copies through Module.to/_apply), well before the loop
  loop      --steps iterations of `inputs_to_device` (batch copies) and a forward/backward/SGD step; no
            NVTX, no record_function: the trace has no steps
  --variant before   inputs_to_device copies the pageable batch with `.to(dev, non_blocking=True)`: it blocks
  --variant after    it pins the batch first (`.pin_memory()`), so the copy is queued; the batch size varies by step
                     (--sizes), so the caching host allocator grows (cudaHostAlloc) inside inputs_to_device

Host timers (what a report must agree with): each call of inputs_to_device and of the model's init `.to(dev)`,
time.perf_counter around it, written by --json with the time of the first batch copy after the start. Runs on a
CPU-only torch too (device cpu, no pinning: CI checks that it runs), e.g. `--device cpu --tiny`.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def build(torch, width: int, depth: int):
    nn = torch.nn
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 10))


def inputs_to_device(torch, batch, dev, pin: bool):
    """The site under test: the loop's batch copy (the `after` variant pins first)."""
    if pin:
        batch = batch.pin_memory()
    return batch.to(dev, non_blocking=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", choices=["before", "after"], default="before")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--width", type=int, default=4096, help="features per sample (and the model's width)")
    ap.add_argument("--depth", type=int, default=8, help="hidden layers: the GPU work per step")
    ap.add_argument("--sizes", default="512,640,768,896", help="batch sizes, in turn (they vary, as real batches do)")
    ap.add_argument("--init-pin-mb", type=int, default=512, help="pinned pool allocated at init (0: none)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true", help="small sizes, for a CPU run in CI")
    ap.add_argument("--json", help="write the host timers here")
    args = ap.parse_args(argv)
    if args.tiny:
        args.width, args.depth, args.sizes, args.init_pin_mb, args.steps = 64, 2, "8,12", 1, min(args.steps, 6)

    import torch

    dev = torch.device(args.device)
    gpu = dev.type == "cuda"
    if gpu and not torch.cuda.is_available():
        print("steady_loop: no CUDA device (use --device cpu)", file=sys.stderr)
        return 2
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    t_start = time.perf_counter()
    pool = torch.empty(args.init_pin_mb << 18, dtype=torch.float32, pin_memory=gpu) if args.init_pin_mb else None
    model = build(torch, args.width, args.depth)
    t0 = time.perf_counter()
    model = model.to(dev)   # init: the weights, one pageable copy each
    init_to_ms = (time.perf_counter() - t0) * 1e3
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    sizes = [int(s) for s in args.sizes.split(",")]
    g = torch.Generator().manual_seed(0)
    batches = [torch.randn(sizes[i % len(sizes)], args.width, generator=g) for i in range(args.steps)]
    labels = [torch.randint(0, 10, (len(b),), generator=g) for b in batches]
    copy_ms, first_copy_s = [], None
    for i, (x, y) in enumerate(zip(batches, labels)):
        t = time.perf_counter()
        first_copy_s = first_copy_s if first_copy_s is not None else t - t_start
        xd = inputs_to_device(torch, x, dev, pin=gpu and args.variant == "after")
        yd = y.to(dev, non_blocking=True)
        copy_ms.append((time.perf_counter() - t) * 1e3)
        loss = torch.nn.functional.cross_entropy(model(xd), yd)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    sync()
    res = {"variant": args.variant, "device": str(dev), "steps": args.steps, "sizes": sizes,
           "init_pin_bytes": pool.numel() * 4 if pool is not None else 0, "init_to_ms": init_to_ms,
           "first_copy_s_after_start": first_copy_s, "inputs_to_device_ms": copy_ms,
           "inputs_to_device_ms_median": statistics.median(copy_ms), "loss": float(loss.detach())}
    print(f"steady_loop variant={args.variant} steps={args.steps} init_to_ms={init_to_ms:.2f} "
          f"inputs_to_device_ms_median={res['inputs_to_device_ms_median']:.3f} first_copy_s={first_copy_s:.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
