#!/usr/bin/env python3
"""A tensor-parallel-shaped step on several ranks: the Qwen-VL input path, then layers joined by all-reduces (issue 41).

One process per rank (vLLM's tensor parallelism): rank r uses GPU r. Each step, every rank copies its inputs the way
vLLM's model runner does -- the M-RoPE positions from a pinned [3, max_num_tokens + 1] buffer and the vision position
ids built with numpy -- then runs --layers column/row-parallel MLP shards, each ended by an all-reduce of the hidden
state (NCCL on GPUs). The host runs up to two steps ahead of the GPU (an event per step, as async scheduling does).

  --variant before   the strided slice of the pinned buffer and the pageable numpy ids: each copy waits for the
                     GPU work queued ahead on its rank
  --variant after    the fixes: the three rows one by one, and .pin_memory() first

--imbalance-ms adds GPU work to rank 0 only, every step: the other ranks' all-reduces then wait on the GPU for
rank 0's part, and their next copies are queued behind those collectives.

Run it as the launcher (`tp_pair.py --world 2 ...` starts one process per rank, each `--rank r`; nsys follows them
into one report) or wrap each rank (`--wrap "python -m nsysh2d.capture.torch_profile -o DIR/tp-rank{rank}.pt.trace.json.gz"`:
one torch.profiler file per rank). NVTX: `warmup N`, `step N`, and inside a step `inputs` and `layers`. Host timers:
each rank writes DIR/tp-VARIANT-rankR.json (--json-dir) with the host time of each step's input copies.
With no GPU (--device cpu, gloo) it runs the same steps on the CPU: the CI's smoke test.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qwen3vl_inputs as qi  # noqa: E402


def launch(args, argv: list[str]) -> int:
    """Start one process per rank (this script with --rank r) and wait for all of them."""
    with socket.socket() as s:          # a free loopback port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
    procs = []
    for r in range(args.world):
        wrap = shlex.split(args.wrap.format(rank=r)) if args.wrap else [sys.executable]
        procs.append(subprocess.Popen([*wrap, os.path.abspath(__file__), *argv, "--rank", str(r)], env=env))
    codes = [p.wait() for p in procs]
    return max(codes, key=abs)


def nvtx(torch, on: bool):
    """push/pop that do nothing without CUDA (a CPU build has no NVTX)."""
    if on:
        return torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
    return (lambda _m: None), (lambda: None)


def rank_main(args) -> int:
    import torch
    import torch.distributed as dist

    cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    dev = torch.device(f"cuda:{args.rank}") if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(dev)
    dist.init_process_group("nccl" if cuda else "gloo", rank=args.rank, world_size=args.world)
    push, pop = nvtx(torch, cuda)
    g = torch.Generator(device="cpu").manual_seed(args.rank)
    shard = args.hidden // args.world
    w1 = [(torch.randn(args.hidden, shard, generator=g) / args.hidden ** 0.5).to(dev) for _ in range(args.layers)]
    w2 = [(torch.randn(shard, args.hidden, generator=g) / shard ** 0.5).to(dev) for _ in range(args.layers)]
    emb = torch.randn(args.tokens, args.hidden, generator=torch.Generator().manual_seed(7)).to(dev)
    grid = qi.grid_for(args.image, args.image)
    inputs = args.input_tokens or args.tokens
    text = inputs - grid.tokens
    if text < 2 or inputs < args.tokens:
        raise SystemExit(f"tp_pair: --input-tokens must exceed the image's {grid.tokens} tokens by 2 or more, and "
                         "not be below --tokens")
    positions = qi.mrope_positions(text // 2, grid, text - text // 2)
    mrope = qi.MRopeBuffer(inputs, dev, pin=cuda)
    done, mrope_us, vision_us, t0 = [], [], [], None
    for i in range(args.warmup + args.steps):
        measured = i >= args.warmup
        if i == args.warmup:
            if cuda:
                torch.cuda.synchronize()
            dist.barrier()
            t0 = time.perf_counter()
        if len(done) >= 2:              # at most two steps queued ahead of the GPU
            done.pop(0).synchronize()
        push(f"step {i - args.warmup}" if measured else f"warmup {i}")
        push("inputs")
        c0 = time.perf_counter()
        mrope.write(0, positions)      # the same values each step: rewriting them in flight changes nothing
        pos = mrope.copy_to_device(positions.shape[1], args.variant)
        c1 = time.perf_counter()
        ids, seqlens = qi.vision_inputs_to_device(qi.vision_pos_ids([grid]), qi.cu_seqlens([grid]), dev, args.variant)
        c2 = time.perf_counter()
        pop()
        push("layers")
        x = emb + pos[0, :args.tokens, None].float() * 1e-3 + ids[:1, :1].float() * 1e-6 + seqlens[-1:].float() * 1e-9
        if cuda and args.rank == 0 and args.imbalance_ms > 0:
            torch.cuda._sleep(int(args.imbalance_ms * args.cycles_per_us * 1000))
        for a, b in zip(w1, w2):
            x = x + torch.nn.functional.gelu(x @ a) @ b
            dist.all_reduce(x)
            x = x / args.world
        pop()
        pop()
        if cuda:
            ev = torch.cuda.Event()
            ev.record()
            done.append(ev)
        if measured:
            mrope_us.append((c1 - c0) * 1e6)
            vision_us.append((c2 - c1) * 1e6)
    if cuda:
        torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    checksum = float(x.double().sum())
    dist.destroy_process_group()
    res = {"variant": args.variant, "rank": args.rank, "world": args.world, "pid": os.getpid(),
           "device": str(dev), "steps": args.steps, "step_ms": wall * 1e3 / args.steps,
           "imbalance_ms": args.imbalance_ms if args.rank == 0 else 0, "mrope_us": [round(u, 1) for u in mrope_us],
           "vision_us": [round(u, 1) for u in vision_us], "copy_us_per_step": statistics.mean(
               m + v for m, v in zip(mrope_us, vision_us)), "checksum": checksum}
    print(f"tp_pair variant={args.variant} rank={args.rank}/{args.world} pid={res['pid']} steps={args.steps} "
          f"step_ms={res['step_ms']:.2f} mrope_us_median={statistics.median(mrope_us):.0f} "
          f"vision_us_median={statistics.median(vision_us):.0f} checksum={checksum:.6g}", flush=True)
    if args.json_dir:
        os.makedirs(args.json_dir, exist_ok=True)
        with open(os.path.join(args.json_dir, f"tp-{args.variant}-rank{args.rank}.json"), "w") as f:
            json.dump(res, f, indent=1)
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", choices=["before", "after"], default="before")
    ap.add_argument("--world", type=int, default=2, help="ranks (one GPU each)")
    ap.add_argument("--rank", type=int, help="run as this rank (the launcher passes it)")
    ap.add_argument("--steps", type=int, default=20, help="measured steps (NVTX `step N`)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--layers", type=int, default=8, help="MLP shards per step, each ended by an all-reduce")
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--tokens", type=int, default=2048, help="tokens per step through the layers")
    ap.add_argument("--input-tokens", type=int, default=0,
                    help="tokens whose inputs are copied per step (the image's and text; default --tokens). A pageable "
                         "copy waits for the queue only above ~2 MiB: 131072 copies 3 MiB of M-RoPE positions")
    ap.add_argument("--image", type=int, default=1024, help="one square image of this many pixels a side")
    ap.add_argument("--imbalance-ms", type=float, default=0.0, help="extra GPU work on rank 0 per step")
    ap.add_argument("--cycles-per-us", type=float, default=1980.0, help="GPU clock for --imbalance-ms (gpu_clock.py)")
    ap.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    ap.add_argument("--wrap", help="command line that runs each rank's script, {rank} filled in")
    ap.add_argument("--json-dir", help="each rank writes its host timers here")
    args = ap.parse_args(argv)
    if args.world < 1 or args.hidden % args.world:
        ap.error("--world must be positive and divide --hidden")
    return launch(args, argv) if args.rank is None else rank_main(args)


if __name__ == "__main__":
    sys.exit(main())
