#!/usr/bin/env python3
"""A host-bound DataLoader training loop: where blocking batch copies cost throughput (issue 15.2).

An ordinary image-classification loop: a map-style Dataset normalizes and flips uint8 images (per
sample, in --workers DataLoader worker processes), the DataLoader collates 64 of them into a 36.75 MiB
float32 batch, the loop copies it with `.to(device, non_blocking=True)` and runs forward, backward and an
SGD step of a small conv net. The main thread queues step N+1 while the GPU still trains on step N -- as
long as the copy does not block.

  --variant before   DataLoader(pin_memory=False): the batch is pageable, so the copy blocks until the GPU
                     work queued ahead has drained and then stages the whole batch: the GPU idles meanwhile
  --variant after    DataLoader(pin_memory=True): the loader's pin thread pins the batch, the copy is
                     queued and returns at once

--depth sets how much GPU work a step holds (extra 3x3 conv blocks); `--calibrate` prints the depth whose
GPU time per step is about --gpu-ms and how fast the loader delivers batches (it must keep up), and exits.
(With --workers 0 the preparation runs in the main thread: then host time, not the copy, bounds a step.)

NVTX: `warmup N` around warm-up iterations (not steps), `step N` around each measured iteration, `batch`
around the copy. Host timers: steps/s over the measured steps; GPU busy per step from CUDA events around
each step's compute (from just after the copy was queued to the end of the optimizer step); GPU idle per
step = wall time per step - busy per step (the DMA of the batch counts as idle: no kernel runs); the
host time of every batch copy. `--json PATH` writes them.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def build(torch, depth: int):
    nn = torch.nn
    layers = [nn.Conv2d(3, 64, 7, stride=2, padding=3), nn.ReLU(), nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.ReLU(),
              nn.Conv2d(128, 256, 3, stride=2, padding=1), nn.ReLU()]
    for _ in range(depth):
        layers += [nn.Conv2d(256, 256, 3, padding=1), nn.ReLU()]
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 1000))


class Images:
    """uint8 images held in memory; __getitem__ does the per-sample work a decoder/augmenter would."""

    def __init__(self, torch, n: int, size: int):
        g = torch.Generator().manual_seed(0)
        self.torch = torch
        self.images = torch.randint(0, 256, (n, 3, size, size), dtype=torch.uint8, generator=g)
        self.labels = torch.randint(0, 1000, (n,), generator=g)
        self.mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1) * 255
        self.std = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1) * 255

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        x = self.images[i].float().sub_(self.mean).div_(self.std)
        if i % 2:
            x = x.flip(2)
        return x, self.labels[i]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", choices=["before", "after"], default="before")
    ap.add_argument("--steps", type=int, default=60, help="measured iterations (NVTX `step N`)")
    ap.add_argument("--warmup", type=int, default=10, help="iterations before them (NVTX `warmup N`)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--depth", type=int, default=4, help="extra conv blocks: the GPU work per step")
    ap.add_argument("--calibrate", action="store_true", help="print the depth for --gpu-ms and the loader's pace, exit")
    ap.add_argument("--gpu-ms", type=float, default=12.0, help="GPU time per step --calibrate aims at")
    ap.add_argument("--workers", type=int, default=8, help="DataLoader worker processes")
    ap.add_argument("--json", help="write the host-timer figures here")
    args = ap.parse_args(argv)

    import torch
    from torch.utils.data import DataLoader

    if not torch.cuda.is_available():
        print("train_loop: no CUDA device", file=sys.stderr)
        return 2
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    data = Images(torch, args.batch * 8, args.size)
    iters = args.warmup + args.steps + (24 if args.calibrate else 0)
    sampler = torch.utils.data.RandomSampler(data, replacement=True, num_samples=iters * args.batch,
                                             generator=torch.Generator().manual_seed(1))
    loader = DataLoader(data, batch_size=args.batch, sampler=sampler, pin_memory=args.variant == "after",
                        num_workers=args.workers)

    if args.calibrate:
        return calibrate(torch, dev, data, loader, args)

    model = build(torch, args.depth).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    nvtx = torch.cuda.nvtx
    events, copy_us = [], []
    t0 = None
    for i, (x, y) in enumerate(loader):
        measured = i >= args.warmup
        if i == args.warmup:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        nvtx.range_push(f"step {i - args.warmup}" if measured else f"warmup {i}")
        nvtx.range_push("batch")
        c0 = time.perf_counter()
        x = x.to(dev, non_blocking=True)
        y = y.to(dev, non_blocking=True)
        c1 = time.perf_counter()
        nvtx.range_pop()
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        end.record()
        nvtx.range_pop()
        if measured:
            events.append((begin, end))
            copy_us.append((c1 - c0) * 1e6)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    busy_ms = sum(b.elapsed_time(e) for b, e in events)
    n = len(events)
    res = {"variant": args.variant, "depth": args.depth, "batch_bytes": args.batch * 3 * args.size ** 2 * 4,
           "steps": n, "steps_per_s": n / wall, "step_ms": wall * 1e3 / n, "gpu_busy_ms_per_step": busy_ms / n,
           "gpu_idle_ms_per_step": (wall * 1e3 - busy_ms) / n, "copy_us_median": statistics.median(copy_us),
           "copy_us": [round(c) for c in copy_us], "loss": float(loss)}
    print(f"train_loop variant={args.variant} depth={args.depth} steps={n} steps_per_s={res['steps_per_s']:.2f} "
          f"step_ms={res['step_ms']:.2f} gpu_busy_ms_per_step={res['gpu_busy_ms_per_step']:.2f} "
          f"gpu_idle_ms_per_step={res['gpu_idle_ms_per_step']:.2f} copy_us_median={res['copy_us_median']:.0f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


def calibrate(torch, dev, data, loader, args) -> int:
    """The depth whose step takes about --gpu-ms on the GPU, and the loader's time per batch."""
    it = iter(loader)
    for _ in range(8):  # workers start, queues fill
        x, y = next(it)
    t = time.perf_counter()
    for _ in range(16):
        next(it)
    loader_ms = (time.perf_counter() - t) / 16 * 1e3
    x, y = x.to(dev), y.to(dev)

    def gpu_ms(depth):
        model = build(torch, depth).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        times = []
        for _ in range(6):
            b, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            b.record()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            e.record()
            torch.cuda.synchronize()
            times.append(b.elapsed_time(e))
        return statistics.median(times[2:])

    g0, g4 = gpu_ms(0), gpu_ms(4)
    per_block = max((g4 - g0) / 4, 1e-3)
    depth = max(0, min(64, round((args.gpu_ms - g0) / per_block)))
    print(f"train_loop calibrate loader_ms_per_batch={loader_ms:.2f} workers={args.workers} gpu_ms_depth0={g0:.2f} "
          f"gpu_ms_depth4={g4:.2f} depth={depth} gpu_ms={gpu_ms(depth):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
