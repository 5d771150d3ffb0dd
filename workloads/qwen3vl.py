#!/usr/bin/env python3
"""Qwen3-VL model-runner reproduction: the per-step host path around vLLM's two H2D copy sites,
with real GPU work (random bf16 weights, Qwen3-VL-2B shapes by default) queued behind them.

  --variant before   M-RoPE positions copied as the strided slice `cpu[:, :N]` of a pinned
                     [3, max_num_tokens + 1] buffer; vision position ids / cu_seqlens built with
                     numpy and copied with `.to(device, non_blocking=True)` from pageable memory.
  --variant after    the vLLM fixes: the three contiguous M-RoPE rows copied one by one; the numpy
                     arrays pinned (`.pin_memory()`) before `.to(device, non_blocking=True)`.
  --variant uva      Model Runner V2's design: no copy at all. Both sites write into pinned host
                     buffers that the kernels read in place through their device address (UVA);
                     two slots per buffer, each rewritten only after the event behind its last
                     reader has completed (qwen3vl_inputs.UvaRing).
  --variant staged   the M-RoPE rows as `after`; the numpy arrays copied (host memcpy) into reused
                     pinned staging slots, then `.to(device, non_blocking=True)` from them: no
                     `.pin_memory()`, so no cudaHostAlloc when the caching host allocator would grow;
                     each slot is rewritten only after the event behind its copy has completed.

Each step (async scheduling, as vLLM V1 with `--async-scheduling`): the host prepares step k's
inputs while step k-1's GPU work is still queued, launches step k, and only then reads step k-1's
sampled tokens. Decode steps replay a CUDA graph. NVTX ranges: `step <k>` with `prepare_inputs`,
`mrope_copy`, `vision_pos_ids`, `pixel_values`, `vision_forward`, `prefill`, `decode`, `sample`.

Simplifications (said plainly): decode requests attend to a fixed-size random KV cache and prefill
chunks attend within the chunk; the decode batch is a fixed set of running requests; new requests
arrive every `--new-request-every` steps and are chunk-prefilled; token ids are random.
`--check-identical` runs every variant (`--variants`) `--repeats` times in one process and checks on
the GPU that every run's sampled tokens and final logits are bitwise identical to the first run's.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qwen3vl_inputs import (  # noqa: E402
    MRopeBuffer, UvaRing, cu_seqlens, grid_for, mrope_positions, next_position, vision_inputs_to_device,
    vision_pos_ids,
)


VARIANTS = ("before", "after", "uva", "staged")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", choices=["before", "after", "uva", "staged"], default="before")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-num-tokens", type=int, default=131072, help="token budget per step (buffer width)")
    ap.add_argument("--decode-batch", type=int, default=32, help="running requests decoded every step")
    ap.add_argument("--kv-len", type=int, default=2048, help="context length each decode token attends to")
    ap.add_argument("--new-request-every", type=int, default=4, help="a new multimodal request every N steps")
    ap.add_argument("--images-per-request", type=int, default=1)
    ap.add_argument("--image-size", type=int, default=1024, help="square image/video frame size in pixels")
    ap.add_argument("--video-frames", type=int, default=256,
                    help="frames of the video each request carries (0: a still image); the default long video "
                         "makes both copy sites large enough to block (see docs/why-non-blocking-blocks.md)")
    ap.add_argument("--prompt-text", type=int, default=64, help="text tokens around the vision tokens")
    # Model shapes (Qwen3-VL-2B by default).
    ap.add_argument("--vision-depth", type=int, default=24)
    ap.add_argument("--vision-hidden", type=int, default=1024)
    ap.add_argument("--vision-heads", type=int, default=16)
    ap.add_argument("--text-layers", type=int, default=28)
    ap.add_argument("--text-hidden", type=int, default=2048)
    ap.add_argument("--text-heads", type=int, default=16)
    ap.add_argument("--text-kv-heads", type=int, default=8)
    ap.add_argument("--text-intermediate", type=int, default=6144)
    ap.add_argument("--vocab", type=int, default=151936)
    ap.add_argument("--no-cuda-graph", action="store_true")
    ap.add_argument("--device", default="cuda", help="cpu runs the same loop without pinning, graphs or NVTX (smoke tests)")
    ap.add_argument("--check-identical", action="store_true",
                    help="run the variants in one process and check outputs are bitwise identical")
    ap.add_argument("--variants", default="before,after,uva,staged", help="--check-identical: the variants, in run order")
    ap.add_argument("--json", help="also write each run's numbers to this JSON file (a list of runs)")
    ap.add_argument("--deterministic", action="store_true",
                    help="deterministic GPU algorithms (torch.use_deterministic_algorithms, cuBLAS workspace config): "
                         "without it, H100 runs of any variant differ in some processes (docs/why-non-blocking-blocks.md)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="--check-identical: rounds of all variants (a race shows in some runs only)")
    return ap


def make_model(args, torch, nn, F):
    dev = torch.device(args.device)
    dt = torch.bfloat16 if dev.type == "cuda" else torch.float32

    class RMSNorm(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.w = nn.Parameter(torch.ones(d))

        def forward(self, x):
            return F.rms_norm(x, (x.shape[-1],), self.w, 1e-6)

    def rotate(x, cos, sin):
        a, b = x.chunk(2, dim=-1)
        return x * cos + torch.cat((-b, a), dim=-1) * sin

    class VisionBlock(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads = heads
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x, cos, sin, segments, seg_len):
            p = x.shape[0]
            q, k, v = self.qkv(self.n1(x)).view(p, 3, self.heads, -1).unbind(1)
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            # Equal-length attention segments (one per frame) batch into one SDPA call.
            q, k, v = (t.view(segments, seg_len, self.heads, -1).transpose(1, 2) for t in (q, k, v))
            o = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(p, -1)
            x = x + self.proj(o)
            return x + self.fc2(F.gelu(self.fc1(self.n2(x))))

    class Vision(nn.Module):
        def __init__(self):
            super().__init__()
            d, h = args.vision_hidden, args.vision_heads
            self.patch = nn.Linear(3 * 2 * 16 * 16, d)
            self.pos_embed = nn.Embedding(4096 * 4, d)
            self.blocks = nn.ModuleList(VisionBlock(d, h) for _ in range(args.vision_depth))
            self.merge = nn.Sequential(nn.LayerNorm(4 * d), nn.Linear(4 * d, 4 * d), nn.GELU(),
                                       nn.Linear(4 * d, args.text_hidden))
            hd = d // h
            self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, hd // 2, 2, dtype=torch.float32) / (hd // 2)))

        def forward(self, pixels, pos_ids, cu, seg_len):
            x = self.patch(pixels)
            # In-segment index from the device cu_seqlens drives the learned absolute position embedding.
            idx = torch.arange(x.shape[0], device=x.device)
            seg = torch.searchsorted(cu[1:].to(torch.int64), idx, right=True)
            x = x + self.pos_embed((idx - cu.to(torch.int64)[seg]).clamp_max(self.pos_embed.num_embeddings - 1))
            freqs = (pos_ids.unsqueeze(-1).float() * self.inv_freq).flatten(1)   # [P, hd/2]
            emb = torch.cat((freqs, freqs), dim=-1)[:, None, :]
            cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
            segments = x.shape[0] // seg_len
            for blk in self.blocks:
                x = blk(x, cos, sin, segments, seg_len)
            return self.merge(x.view(-1, 4 * x.shape[-1]))

    class TextLayer(nn.Module):
        def __init__(self):
            super().__init__()
            d, self.h, self.kvh = args.text_hidden, args.text_heads, args.text_kv_heads
            self.hd = d // self.h
            self.n1, self.n2 = RMSNorm(d), RMSNorm(d)
            self.qkv = nn.Linear(d, (self.h + 2 * self.kvh) * self.hd, bias=False)
            self.o = nn.Linear(self.h * self.hd, d, bias=False)
            self.gate_up = nn.Linear(d, 2 * args.text_intermediate, bias=False)
            self.down = nn.Linear(args.text_intermediate, d, bias=False)

        def forward(self, x, cos, sin, kv=None):
            n = x.shape[0]
            qkv = self.qkv(self.n1(x))
            q, k, v = qkv.split([self.h * self.hd, self.kvh * self.hd, self.kvh * self.hd], dim=-1)
            q = rotate(q.view(n, self.h, self.hd), cos, sin)
            k = rotate(k.view(n, self.kvh, self.hd), cos, sin)
            v = v.view(n, self.kvh, self.hd)
            if kv is None:   # prefill chunk: causal attention within the chunk
                o = F.scaled_dot_product_attention(q.transpose(0, 1)[None], k.transpose(0, 1)[None],
                                                   v.transpose(0, 1)[None], is_causal=True, enable_gqa=True)
                o = o[0].transpose(0, 1)
            else:            # decode: each token attends to its request's cache plus itself
                kc, vc = kv
                kk = torch.cat((kc, k[:, :, None]), dim=2)
                vv = torch.cat((vc, v[:, :, None]), dim=2)
                o = F.scaled_dot_product_attention(q[:, :, None], kk, vv, enable_gqa=True)[:, :, 0]
            x = x + self.o(o.reshape(n, -1))
            g, u = self.gate_up(self.n2(x)).chunk(2, dim=-1)
            return x + self.down(F.silu(g) * u)

    class Text(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(args.vocab, args.text_hidden)
            self.layers = nn.ModuleList(TextLayer() for _ in range(args.text_layers))
            self.norm = RMSNorm(args.text_hidden)
            hd = args.text_hidden // args.text_heads
            self.register_buffer("inv_freq", 1.0 / 1_000_000 ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
            half = hd // 2
            sec = [half * 24 // 64, half * 20 // 64]
            sec.append(half - sum(sec))
            # Which of (t, h, w) drives each rotary frequency (Qwen3-VL's interleaved M-RoPE layout).
            axis = torch.zeros(half, dtype=torch.long)
            axis[1::3], axis[2::3] = 1, 2
            self.register_buffer("axis", axis)

        def rope(self, positions):
            freqs = positions.float().unsqueeze(-1) * self.inv_freq            # [3, N, hd/2]
            f = freqs.gather(0, self.axis.view(1, 1, -1).expand(1, freqs.shape[1], -1))[0]
            emb = torch.cat((f, f), dim=-1)[:, None, :]
            return emb.cos().to(dt), emb.sin().to(dt)

        def forward(self, x, positions, kv_cache=None, rope=None):
            cos, sin = self.rope(positions) if rope is None else rope
            for i, layer in enumerate(self.layers):
                x = layer(x, cos, sin, None if kv_cache is None else kv_cache[i])
            return self.norm(x)

        def logits(self, h):
            return h @ self.embed.weight.t()

    torch.manual_seed(args.seed)
    with torch.device(dev):
        vision, text = Vision().to(dt), Text().to(dt)
    for m in (vision, text):
        for p in m.parameters():
            p.data.normal_(0, 0.02)
    hd = args.text_hidden // args.text_heads
    kv = [(torch.randn(args.decode_batch, args.text_kv_heads, args.kv_len, hd, device=dev, dtype=dt),
           torch.randn(args.decode_batch, args.text_kv_heads, args.kv_len, hd, device=dev, dtype=dt))
          for _ in range(args.text_layers)]
    return vision.eval(), text.eval(), kv


def run(args, variant: str):
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    gpu = dev.type == "cuda"
    nvtx = torch.cuda.nvtx if gpu else _NoNvtx()
    Event = torch.cuda.Event if gpu else _HostEvent
    vision, text, kv = make_model(args, torch, nn, F)
    rng = np.random.default_rng(args.seed)
    B = args.decode_batch
    frames = args.video_frames if args.video_frames > 0 else 1
    grid = grid_for(args.image_size, args.image_size, frames)
    grids = [grid] * args.images_per_request
    vision_tokens = sum(g.tokens for g in grids)
    seg_len = grid.h * grid.w
    max_tokens = args.max_num_tokens
    if B >= max_tokens:
        raise SystemExit("--decode-batch must be below --max-num-tokens")

    # Pinned, contiguous staging buffers (as the V1 runner's CpuGpuBuffer) and their device twins.
    ids_cpu = torch.zeros(max_tokens, dtype=torch.int64, pin_memory=gpu)
    ids_gpu = torch.zeros(max_tokens, dtype=torch.int64, device=dev)
    qsl_cpu = torch.zeros(B + 2, dtype=torch.int32, pin_memory=gpu)
    qsl_gpu = torch.zeros(B + 2, dtype=torch.int32, device=dev)
    uva = variant == "uva"
    mrope = MRopeBuffer(max_tokens, dev, pin=gpu, uva=uva)
    # uva: the vision position ids and cu_seqlens get pinned slots the vision kernels read in place;
    # staged: pinned slots they are copied from (no device views).
    vrings = None
    if uva or variant == "staged":
        pid0, cu0 = vision_pos_ids(grids), cu_seqlens(grids)
        vrings = (UvaRing(pid0.shape, torch.int64, gpu, view=uva), UvaRing(cu0.shape, torch.int32, gpu, view=uva))
    patch_dim = 3 * 2 * 16 * 16
    # Pixel content does not matter: one random frame of patches, tiled over every frame and item.
    frame = torch.randn(seg_len, patch_dim, generator=torch.Generator().manual_seed(args.seed))
    pix_cpu = frame.to(torch.bfloat16 if gpu else torch.float32).repeat(sum(g.patches for g in grids) // seg_len, 1)
    if gpu:
        pix_cpu = pix_cpu.pin_memory()
    sampled_cpu = [torch.zeros(B + 1, dtype=torch.int64, pin_memory=gpu) for _ in range(2)]
    events = [None, None]

    # Decode state: the running requests' next positions and last tokens (on the device).
    dec_pos = rng.integers(100, 2000, size=B).astype(np.int64)
    dec_tokens = torch.from_numpy(rng.integers(0, args.vocab, size=B)).to(dev)
    static_ids = torch.zeros(B, dtype=torch.int64, device=dev)
    static_pos = torch.zeros(3, B, dtype=torch.int64, device=dev)

    def decode_fn():
        h = text(text.embed(static_ids), static_pos, kv)
        return text.logits(h).argmax(-1)

    graph, static_out = None, None
    with torch.inference_mode():
        if gpu and not args.no_cuda_graph:
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(2):
                    decode_fn()
            torch.cuda.current_stream().wait_stream(s)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_out = decode_fn()
        if gpu:
            torch.cuda.synchronize()

        pending = []   # requests in prefill: dict(prompt ids, positions, done, vision done)
        host_ms, starts, ends = [], [], []
        site_ms = {"mrope_copy": [], "vision_pos_ids": []}
        read_ev = []   # (start, end) events around every GPU read of the M-RoPE positions
        max_n = 0
        inputs_copied = None
        all_tokens = []
        last_logits = None
        t_loop = time.perf_counter()
        for step in range(args.steps):
            t0 = time.perf_counter()
            ev_start = Event(enable_timing=True)
            ev_start.record()
            nvtx.range_push(f"step {step}")
            if step % args.new_request_every == 0:
                # Prompt: text, then every vision item back to back, then text.
                before, after = args.prompt_text // 4, args.prompt_text - args.prompt_text // 4
                parts, start = [], 0
                for i, g in enumerate(grids):
                    parts.append(mrope_positions(before if i == 0 else 0, g, 0, start))
                    start = next_position(parts[-1])
                parts.append(mrope_positions(0, None, after, start))
                pos = np.concatenate(parts, axis=1)
                L = pos.shape[1]
                ids = rng.integers(0, args.vocab, size=L).astype(np.int64)
                pending.append({"pos": pos, "ids": ids, "done": 0, "vision": None, "len": L})

            nvtx.range_push("prepare_inputs")
            # The pinned staging buffers are about to be rewritten: wait until the previous step's
            # async copies out of them have run (vLLM does the same under async scheduling).
            if inputs_copied is not None:
                inputs_copied.synchronize()
            mrope.acquire()   # uva: the slot that no queued kernel still reads
            budget = max_tokens - B
            chunk = None
            if pending:
                req = pending[0]
                n = min(budget, req["len"] - req["done"])
                chunk = (req, req["done"], n)
            n_pre = chunk[2] if chunk else 0
            N = n_pre + B
            if chunk:
                req, off, n = chunk
                ids_cpu.numpy()[:n] = req["ids"][off:off + n]
                mrope.write(0, req["pos"][:, off:off + n])
            dp = np.broadcast_to(dec_pos, (3, B))
            mrope.write(n_pre, dp)
            q = qsl_cpu.numpy()
            q[0] = 0
            q[1:] = n_pre + np.arange(B + 1)
            ids_gpu[:n_pre].copy_(ids_cpu[:n_pre], non_blocking=True)
            qsl_gpu.copy_(qsl_cpu, non_blocking=True)
            nvtx.range_push("mrope_copy")
            tc = time.perf_counter()
            positions = mrope.copy_to_device(N, "after" if variant == "staged" else variant)
            max_n = max(max_n, N)
            site_ms["mrope_copy"].append((time.perf_counter() - tc) * 1e3)
            nvtx.range_pop()
            inputs_copied = Event()
            inputs_copied.record()
            nvtx.range_pop()

            if chunk:
                req, off, n = chunk
                if req["vision"] is None:
                    nvtx.range_push("vision_pos_ids")
                    tc = time.perf_counter()
                    pid, cu = vision_inputs_to_device(vision_pos_ids(grids), cu_seqlens(grids), dev, variant,
                                                       rings=vrings)
                    site_ms["vision_pos_ids"].append((time.perf_counter() - tc) * 1e3)
                    nvtx.range_pop()
                    nvtx.range_push("pixel_values")
                    pixels = pix_cpu.to(dev, non_blocking=True)
                    nvtx.range_pop()
                    nvtx.range_push("vision_forward")
                    req["vision"] = vision(pixels, pid, cu, seg_len)
                    if uva:   # the vision kernels were the slots' last readers
                        read = Event()
                        read.record()
                        for r in vrings:
                            r.release(read)
                    nvtx.range_pop()
                nvtx.range_push("prefill")
                x = text.embed(ids_gpu[:n])
                # Vision tokens replace their placeholders wherever this chunk overlaps them.
                vb = args.prompt_text // 4
                lo, hi = max(off, vb), min(off + n, vb + vision_tokens)
                if lo < hi:
                    x[lo - off:hi - off] = req["vision"][lo - vb:hi - vb]
                # The kernels that read the M-RoPE positions, timed on the GPU (uva: over PCIe).
                nvtx.range_push("rope")
                r0, r1 = Event(enable_timing=True), Event(enable_timing=True)
                r0.record()
                rope = text.rope(positions[:, :n])
                r1.record()
                nvtx.range_pop()
                read_ev.append((r0, r1))
                hpre = text(x, positions[:, :n], rope=rope)
                pre_tok = text.logits(hpre[-1:]).argmax(-1)
                nvtx.range_pop()
                req["done"] += n
                if req["done"] >= req["len"]:
                    pending.pop(0)
            else:
                pre_tok = torch.zeros(1, dtype=torch.int64, device=dev)

            nvtx.range_push("decode")
            static_ids.copy_(dec_tokens)
            d0, d1 = Event(enable_timing=True), Event(enable_timing=True)
            d0.record()
            static_pos.copy_(positions[:, n_pre:N])
            d1.record()
            read_ev.append((d0, d1))
            if graph is not None:
                graph.replay()
                out = static_out
            else:
                out = decode_fn()
            nvtx.range_pop()
            nvtx.range_push("sample")
            dec_tokens = out.clone()
            tok = torch.cat((out, pre_tok))
            all_tokens.append(tok)
            slot = step % 2
            sampled_cpu[slot].copy_(tok, non_blocking=True)
            ev = Event()
            ev.record()
            events[slot] = ev
            mrope.release(ev)   # uva: prefill's rope and decode's static_pos read the slot before this
            nvtx.range_pop()
            nvtx.range_pop()
            ev_end = Event(enable_timing=True)
            ev_end.record()
            starts.append(ev_start)
            ends.append(ev_end)
            dec_pos += 1
            # Async scheduling: step k-1's tokens are read only now, after step k is launched.
            prev = events[1 - slot]
            if prev is not None:
                prev.synchronize()
                _ = sampled_cpu[1 - slot].tolist()
            host_ms.append((time.perf_counter() - t0) * 1e3)
        last_logits = text.logits(text.norm(text.embed(dec_tokens)))
        if gpu:
            torch.cuda.synchronize()
        wall_s = time.perf_counter() - t_loop
    idle = [max(0.0, ends[i - 1].elapsed_time(starts[i])) for i in range(1, len(starts))]
    busy = [starts[i].elapsed_time(ends[i]) for i in range(len(starts))]
    tokens = torch.stack([t for t in all_tokens])
    pos_read_ms = sum(a.elapsed_time(b) for a, b in read_ev)
    return {"tokens": tokens, "logits": last_logits, "host_ms": host_ms, "gpu_idle_ms": idle, "gpu_ms": busy,
            "wall_s": wall_s, "positions_read_gpu_ms": pos_read_ms,
            "site_ms": site_ms, "payload_bytes": {"mrope_copy_max": 3 * 8 * max_n,
                                               "vision_pos_ids": int(vision_pos_ids(grids).nbytes)}}


class _NoNvtx:
    def range_push(self, name):
        pass

    def range_pop(self):
        pass


class _HostEvent:
    """Stand-in for torch.cuda.Event on the CPU: the work is synchronous, so host time is GPU time."""

    def __init__(self, enable_timing=False):
        self.t = None

    def record(self):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return (other.t - self.t) * 1e3


def digest(t) -> str:
    import torch

    return hashlib.sha256(t.contiguous().view(-1).view(dtype=torch.uint8).cpu().numpy().tobytes()).hexdigest()[:16]


def report(variant: str, res: dict) -> None:
    print(f"[{variant}] steps={len(res['host_ms'])} host_ms/step median={statistics.median(res['host_ms']):.2f} "
          f"max={max(res['host_ms']):.2f}  gpu_ms/step median={statistics.median(res['gpu_ms']):.2f}  "
          f"gpu_idle_ms/step median={statistics.median(res['gpu_idle_ms'] or [0]):.3f} "
          f"total={sum(res['gpu_idle_ms']):.2f}")
    print(f"[{variant}] host_ms per step: " + " ".join(f"{x:.1f}" for x in res["host_ms"]))
    for site, ms in res["site_ms"].items():
        if ms:
            print(f"[{variant}] site {site}: calls={len(ms)} host_ms median={statistics.median(ms):.3f} max={max(ms):.3f}")
    pb = res["payload_bytes"]
    print(f"[{variant}] payload bytes: vision pos ids {pb['vision_pos_ids']} per request, "
          f"M-RoPE copy up to {pb['mrope_copy_max']}")
    print(f"[{variant}] loop wall {res['wall_s']:.3f} s = {len(res['host_ms']) / res['wall_s']:.3f} steps/s; "
          f"GPU time of the kernels reading the M-RoPE positions {res['positions_read_gpu_ms']:.3f} ms")
    print(f"[{variant}] output digest tokens={digest(res['tokens'])} logits={digest(res['logits'])}")


def summary(variant: str, res: dict) -> dict:
    """The numbers of one run, as JSON (docs tables are medians over alternating runs of these)."""
    return {"variant": variant, "steps": len(res["host_ms"]), "host_ms": res["host_ms"], "wall_s": res["wall_s"],
            "steps_per_s": len(res["host_ms"]) / res["wall_s"], "gpu_ms": res["gpu_ms"],
            "gpu_idle_ms": res["gpu_idle_ms"], "site_ms": res["site_ms"],
            "positions_read_gpu_ms": res["positions_read_gpu_ms"], "payload_bytes": res["payload_bytes"],
            "digest": {"tokens": digest(res["tokens"]), "logits": digest(res["logits"])}}


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.deterministic:   # before cuBLAS starts: it reads the workspace setting once
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch

    if args.deterministic:
        torch.use_deterministic_algorithms(True, warn_only=True)   # warns where an op has no deterministic kernel
        torch.backends.cudnn.benchmark = False

    if args.device == "cuda" and not torch.cuda.is_available():
        print("qwen3vl: no CUDA device (use --device cpu for a smoke run)", file=sys.stderr)
        return 2
    name = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    print(f"# device={name} torch={torch.__version__} args={vars(args)}")
    if args.check_identical:
        variants = [v for v in args.variants.split(",") if v]
        bad = [v for v in variants if v not in VARIANTS]
        if bad or not variants or args.repeats < 1:
            print(f"qwen3vl: --variants takes {','.join(VARIANTS)} and --repeats >= 1 (got {args.variants!r}, "
                  f"{args.repeats})", file=sys.stderr)
            return 2
        runs, summaries = [], []
        for _ in range(args.repeats):
            for v in variants:
                res = run(args, v)
                report(v, res)
                summaries.append(summary(v, res))
                runs.append((v, res["tokens"], res["logits"]))
                del res
        _, t0, l0 = runs[0]
        differ = [i for i, (_, t, lg) in enumerate(runs) if not (torch.equal(t0, t) and torch.equal(l0, lg))]
        for i in differ:
            print(f"run {i + 1} ({runs[i][0]}) differs from run 1 ({runs[0][0]})")
        write_json(args.json, summaries)
        print(f"identical outputs over {len(runs)} runs ({','.join(variants)} x {args.repeats}; "
              f"checked on {args.device} with torch.equal): {not differ}")
        return 0 if not differ else 1
    res = run(args, args.variant)
    report(args.variant, res)
    write_json(args.json, [summary(args.variant, res)])
    return 0


def write_json(path, runs) -> None:
    if path:
        import json

        with open(path, "w") as f:
            json.dump(runs, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
