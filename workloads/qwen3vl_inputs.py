"""Host-side input builders of the Qwen3-VL model-runner reproduction (workloads/qwen3vl.py).

Everything here runs on the CPU and is tested in CI; the GPU parts live in qwen3vl.py.
The two copy sites that vLLM fixed are `MRopeBuffer.copy_to_device` and `vision_inputs_to_device`;
`UvaRing` holds the third design (no copy: kernels read pinned memory in place).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

PATCH = 16           # vision patch size (pixels)
TEMPORAL_PATCH = 2   # frames per temporal patch (videos); a still image is one temporal patch
MERGE = 2            # spatial merge: MERGE x MERGE patches become one LLM token


@dataclass(frozen=True)
class Grid:
    """A vision item's patch grid: t temporal patches of h x w spatial patches."""
    t: int
    h: int
    w: int

    @property
    def patches(self) -> int:
        return self.t * self.h * self.w

    @property
    def tokens(self) -> int:
        return self.patches // (MERGE * MERGE)


def grid_for(height: int, width: int, frames: int = 1) -> Grid:
    """Patch grid of an image (frames=1) or a video (frames >= 2) of the given pixel size."""
    if height % (PATCH * MERGE) or width % (PATCH * MERGE):
        raise ValueError(f"image size {height}x{width} must be a multiple of {PATCH * MERGE}")
    t = 1 if frames <= 1 else (frames + TEMPORAL_PATCH - 1) // TEMPORAL_PATCH
    return Grid(t, height // PATCH, width // PATCH)


@lru_cache(maxsize=64)
def _hw_pos_ids(h: int, w: int) -> np.ndarray:
    """(row, col) of each patch for one frame, in the order the spatial merge visits them:
    MERGE x MERGE blocks row-major, patches inside a block row-major. Cached per shape, as vLLM does."""
    hpos = np.broadcast_to(np.arange(h)[:, None], (h, w))
    wpos = np.broadcast_to(np.arange(w)[None, :], (h, w))

    def merge_order(a: np.ndarray) -> np.ndarray:
        return a.reshape(h // MERGE, MERGE, w // MERGE, MERGE).transpose(0, 2, 1, 3).reshape(-1)

    out = np.stack([merge_order(hpos), merge_order(wpos)], axis=-1).astype(np.int64)
    out.setflags(write=False)
    return out


def vision_pos_ids(grids: list[Grid]) -> np.ndarray:
    """Rotary position ids `[sum(patches), 2]` int64 for all vision items, built with numpy (never
    pinned), as vLLM's Qwen3-VL vision tower does. One 1024x1024 image: 4096 x 2 x 8 B = 64 KiB."""
    parts = [np.tile(_hw_pos_ids(g.h, g.w), (g.t, 1)) for g in grids]
    if not parts:
        return np.zeros((0, 2), dtype=np.int64)
    return np.concatenate(parts, axis=0)


def cu_seqlens(grids: list[Grid]) -> np.ndarray:
    """Cumulative attention-segment lengths (one segment per frame of every item), int32, leading 0."""
    lens = [g.h * g.w for g in grids for _ in range(g.t)]
    return np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)


def mrope_positions(text_before: int, grid: Grid | None, text_after: int, start: int = 0) -> np.ndarray:
    """3-D M-RoPE positions `[3, L]` (temporal, height, width) of one prompt: text tokens advance all
    three together; the merged vision tokens take their (t, h, w) grid coordinates."""
    cols = []
    pos = start
    if text_before:
        cols.append(np.broadcast_to(np.arange(pos, pos + text_before), (3, text_before)))
        pos += text_before
    if grid is not None:
        gh, gw = grid.h // MERGE, grid.w // MERGE
        t = np.repeat(np.arange(grid.t), gh * gw)
        h = np.tile(np.repeat(np.arange(gh), gw), grid.t)
        w = np.tile(np.arange(gw), grid.t * gh)
        cols.append(np.stack([t, h, w]) + pos)
        pos += max(grid.t, gh, gw)
    if text_after:
        cols.append(np.broadcast_to(np.arange(pos, pos + text_after), (3, text_after)))
    if not cols:
        return np.zeros((3, 0), dtype=np.int64)
    return np.concatenate(cols, axis=1).astype(np.int64)


def next_position(positions: np.ndarray) -> int:
    """Position of the first generated token after a prompt (max over the three axes + 1)."""
    return int(positions.max()) + 1 if positions.size else 0


def device_view(host):
    """A CUDA tensor over a pinned host tensor's own memory (unified virtual addressing: a pinned
    allocation has the same address on the device), so kernels read it over PCIe with no copy call.
    PyTorch has no public call for this; `__cuda_array_interface__` hands it the address, and PyTorch
    checks with cudaPointerGetAttributes that the memory is registered with CUDA. On the CPU
    (smoke runs) the host tensor is its own view."""
    import torch

    if not host.is_pinned():
        return host

    class _Iface:
        def __init__(self, t):
            self.keep = t   # the view must not outlive the pinned storage
            self.__cuda_array_interface__ = {
                "shape": tuple(t.shape), "typestr": t.numpy().dtype.str, "version": 3,
                "data": (t.data_ptr(), False), "strides": tuple(x * t.element_size() for x in t.stride())}

    return torch.as_tensor(_Iface(host), device="cuda")


class UvaRing:
    """Pinned host slots the GPU reads in place (`device_view`). The host may rewrite a slot only
    after every queued kernel that reads it has run: each slot keeps the event recorded behind its
    last reader, and `acquire` waits on it. Two slots let the host fill step k+1's inputs while step
    k's kernels still read theirs; under async scheduling step k-1 has finished by then, so the wait
    is normally already over."""

    def __init__(self, shape, dtype, pin: bool, slots: int = 2, view: bool = True):
        import torch

        self.host = [torch.zeros(shape, dtype=dtype, pin_memory=pin) for _ in range(slots)]
        # view=False: staging slots that are copied from (variant `staged`), not read in place
        self.dev = [device_view(h) if view else None for h in self.host]
        self.done = [None] * slots
        self.i = 0

    def acquire(self):
        self.i = (self.i + 1) % len(self.host)
        if self.done[self.i] is not None:
            self.done[self.i].synchronize()
            self.done[self.i] = None
        return self.host[self.i], self.dev[self.i]

    def release(self, event) -> None:
        """`event` is recorded on the stream after the last kernel that reads the current slot."""
        self.done[self.i] = event


class MRopeBuffer:
    """vLLM's M-RoPE positions buffer: a pinned `[3, max_num_tokens + 1]` int64 CPU tensor and its
    device twin. The extra column makes `cpu[:, :N]` a strided view, which PyTorch copies through a
    pageable contiguous temporary (the `before` bug). With `uva`, there is no device twin: the kernels
    read the pinned buffer itself through its device address (Model Runner V2's design), from a
    two-slot `UvaRing`."""

    def __init__(self, max_num_tokens: int, device, pin: bool, uva: bool = False):
        import torch

        self.max_num_tokens = max_num_tokens
        self.ring = UvaRing((3, max_num_tokens + 1), torch.int64, pin) if uva else None
        if self.ring is None:
            self.cpu = torch.zeros((3, max_num_tokens + 1), dtype=torch.int64, pin_memory=pin)
            self.gpu = torch.zeros((3, max_num_tokens + 1), dtype=torch.int64, device=device)
        else:
            self.cpu, self.gpu = self.ring.host[0], self.ring.dev[0]

    def acquire(self) -> None:
        """Before a step writes positions: with `uva`, take the slot no queued kernel still reads."""
        if self.ring is not None:
            self.cpu, self.gpu = self.ring.acquire()

    def release(self, event) -> None:
        if self.ring is not None:
            self.ring.release(event)

    def write(self, offset: int, positions: np.ndarray) -> None:
        n = positions.shape[1]
        if offset + n > self.max_num_tokens:
            raise ValueError(f"{offset + n} tokens exceed max_num_tokens={self.max_num_tokens}")
        self.cpu.numpy()[:, offset:offset + n] = positions

    def copy_to_device(self, n: int, variant: str):
        if variant == "before":
            self.gpu[:, :n].copy_(self.cpu[:, :n], non_blocking=True)  # strided slice: pageable temp
        elif variant == "after":
            for row in range(3):  # each row is contiguous in the pinned buffer: a true async DMA
                self.gpu[row, :n].copy_(self.cpu[row, :n], non_blocking=True)
        elif variant == "uva":
            if self.ring is None:
                raise ValueError("variant 'uva' needs MRopeBuffer(..., uva=True)")
            # no copy: the kernels read the pinned slot in place
        else:
            raise ValueError(f"unknown variant {variant!r}")
        return self.gpu[:, :n]


def vision_inputs_to_device(pos_ids: np.ndarray, seqlens: np.ndarray, device, variant: str, rings=None):
    """Move the numpy-built vision position ids and cu_seqlens to the device: `before` copies the
    pageable numpy memory (blocks behind queued GPU work); `after` pins first (the vLLM fix); `uva`
    writes them into pinned `UvaRing` slots (`rings`, one per array) that the vision kernels read in
    place: no copy call (the caller releases the slots behind their readers); `staged` writes them into
    reused pinned slots and copies from those (each slot released behind its own copy)."""
    import torch

    if variant in ("staged", "uva"):
        if rings is None:
            raise ValueError(f"variant {variant!r} needs the staging rings")
        out = []
        for arr, ring in zip((pos_ids, seqlens), rings):
            host, dev = ring.acquire()   # waits, if ever, for the last reader of this slot
            if tuple(host.shape) != arr.shape:
                raise ValueError(f"staging slot {tuple(host.shape)} does not fit {arr.shape}")
            host.numpy()[...] = arr
            if variant == "uva":
                out.append(dev)
                continue
            out.append(host.to(device, non_blocking=True, copy=True))
            if host.is_pinned():   # the copy is the slot's reader
                read = torch.cuda.Event()
                read.record()
                ring.release(read)
        return out[0], out[1]
    out = []
    for arr in (pos_ids, seqlens):
        t = torch.from_numpy(arr)
        if variant == "after" and torch.cuda.is_available():
            t = t.pin_memory()
        elif variant not in ("before", "after"):
            raise ValueError(f"unknown variant {variant!r}")
        out.append(t.to(device, non_blocking=True))
    return out[0], out[1]
