"""Catch blocking host-to-device copies without nsys: a checker that watches PyTorch's copies as they happen.

    from nsysh2d.checker.runtime import Checker
    with Checker() as chk:
        train_one_epoch()
    print(chk.report())          # the same vocabulary as the trace analysis: source_class, site, fix

Inside the `with`, every `non_blocking=True` copy from the CPU to a watched device (`aten._to_copy`,
`aten.copy_`) is classified by the rules PyTorch's CUDA copy follows (aten/src/ATen/native/cuda/Copy.cu):
- the source is not pinned: `cudaMemcpyAsync` from pageable memory, which waits for the GPU work queued ahead
  (class `pageable`; `file_backed` when that memory is a file mapping: safetensors or `torch.load(mmap=True)`
  tensors, `np.memmap`, `torch.from_file`, whose pages may also be read from disk during the copy);
- the source is pinned but the copy needs a temporary (other strides or dtype than the destination) and
  `src.expand_as(dst).contiguous()` is a new tensor: that temporary is pageable, so the copy waits as well
  (class `pinned_strided`: slices such as `buf[:, :n]`, expanded views);
- otherwise (pinned and laid out as the destination, including dense transposed views and dtype changes of a
  contiguous source, which are converted on the GPU) nothing waits (class `pinned`, not flagged).
A `pinned` copy is truly asynchronous, so its source must not change until the GPU has read it: the checker
records a CUDA event behind each one and flags an in-place write (any op that writes a CPU tensor: `copy_`,
`fill_`, `index_put_`, `out=` ...) into that memory while the event has not completed (`rewrites`, with the
write's and the copy's sites). Writes through `.numpy()` or raw pointers bypass the dispatcher and are not seen.
Limits: one thread's dispatch (a mode is per thread), copies made by C++ code that never goes through the
Python dispatcher are not seen, and only what the copy *would* wait for is judged, not how long it waits.
Imports torch only (no duckdb, polars): it runs where the workload runs.
"""
from __future__ import annotations

import importlib.util
import os
import re
import runpy
import sys
import traceback
from dataclasses import asdict, dataclass, field

from ..capture.copy_class import FileMaps, dense, source_class  # noqa: F401  (dense: part of this module's API)
from ..errors import BadInput
from ..rules.allowlist import accepted_at, accepted_class_at
from ..rules.fixes import FIXES, REWRITE
from ..rules.sites import is_library, site_names
from .byte_runs import overlap, runs

FLAGGED = ("pageable", "pinned_strided", "file_backed")
# torch outside site-packages (a source build) is not the user's program either; sites.is_library has the rest.
_TORCH = os.sep + "torch" + os.sep


@dataclass
class Copy:
    op: str
    bytes: int
    source_class: str
    flagged: bool
    site: str | None
    site_line: str | None
    shape: list[int]
    src_strides: list[int]
    dtype: str
    fix: str | None = None
    accepted: str | None = None   # the reason of `# nsysh2d: ok[...] <reason>` on the call site's line


@dataclass
class Rewrite:
    """An in-place write into pinned memory that a non_blocking copy may not have read yet."""
    op: str
    bytes: int
    site: str | None
    site_line: str | None
    copy_site: str | None
    copy_site_line: str | None
    fix: str = REWRITE
    accepted: str | None = None


@dataclass
class Checker:
    """A context manager recording the non_blocking copies from the CPU to `devices` made inside it."""
    devices: tuple[str, ...] = ("cuda",)
    copies: list[Copy] = field(default_factory=list)
    rewrites: list[Rewrite] = field(default_factory=list)
    accepted_rewrites: list[Rewrite] = field(default_factory=list)   # accepted in source (nsysh2d/rules/allowlist.py)
    # pinned sources whose copy may still be in flight: (byte runs, event, copy's site, its line)
    _in_flight: list[tuple] = field(default_factory=list, repr=False)
    _event = None   # makes the event recorded behind a pinned copy; tests give one that needs no GPU
    _maps: FileMaps = field(default_factory=FileMaps, repr=False)
    crash = None    # run_script: the exception the script raised, if it did

    def __enter__(self):
        from torch.utils._python_dispatch import TorchDispatchMode   # lazy: torch only when a script runs

        checker = self

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                checker._writes(func, args, kwargs)
                out = func(*args, **kwargs)
                checker._seen(func, args, kwargs)
                return out

        self._mode = _Mode()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc):
        self._mode.__exit__(*exc)
        return False

    # -------------------------------------------------------------------------------- recording
    def _seen(self, func, args, kwargs) -> None:
        import torch   # lazy: torch only when a script runs

        name = getattr(func, "__name__", str(func)).split(".")[0]
        if name not in ("_to_copy", "to", "copy_"):
            return
        # By argument name, whatever the overload: aten.to.* reaches a mode under inference_mode (it is
        # decomposed into _to_copy otherwise), with device/dtype positional or keyword.
        bound = _bind(func, args, kwargs)
        if not bound.get("non_blocking"):
            return
        if name == "copy_":
            dst, src = bound["self"], bound["src"]
            if dst.device.type not in self.devices:
                return
            dtype, dst_shape, dst_strides = dst.dtype, tuple(dst.shape), dst.stride()
        else:
            src, other = bound["self"], bound.get("other")
            device = bound.get("device") or (other.device if isinstance(other, torch.Tensor) else None)
            if device is None or torch.device(device).type not in self.devices:
                return
            dtype = bound.get("dtype") or (other.dtype if isinstance(other, torch.Tensor) else src.dtype)
            fmt = bound.get("memory_format") or torch.preserve_format
            meta = torch.empty_like(src, device="meta", dtype=dtype, memory_format=fmt)
            dst_shape, dst_strides = tuple(meta.shape), meta.stride()
        if not isinstance(src, torch.Tensor) or src.device.type != "cpu":
            return
        cls = source_class(tuple(src.shape), src.stride(), src.dtype, _pinned(src), dst_shape, dst_strides, dtype)
        if cls == "pageable" and self._maps.is_file(src.data_ptr()):   # a memory-mapped file (safetensors, mmap=True)
            cls = "file_backed"
        site, line, path, lineno = user_frame()
        event = self._record(dst_device(bound, name)) if cls == "pinned" else None
        if event is not None:   # truly async: the GPU reads src later; remember it until the copy is done
            self._in_flight.append((runs(src), event, site, line))
        ok = accepted_class_at(path, lineno, cls) if cls in FLAGGED and path else None
        self.copies.append(Copy(name, src.numel() * src.element_size(), cls, cls in FLAGGED and not ok, site, line,
                                list(src.shape), list(src.stride()), str(src.dtype).replace("torch.", ""),
                                FIXES.get(cls) if cls in FLAGGED else None, ok))

    def _record(self, device):
        import torch   # lazy: torch only when a script runs

        if self._event is not None:
            return self._event()
        if device.type != "cuda":   # CUDA events only; other devices' copies are not tracked
            return None
        ev = torch.cuda.Event()
        ev.record(torch.cuda.current_stream(device))
        return ev

    def _writes(self, func, args, kwargs) -> None:
        """Before an op runs: does it write pinned memory that a copy in flight still reads?"""
        if not self._in_flight:
            return
        bound = _bind(func, args, kwargs)
        written = [bound.get(a.name) for a in func._schema.arguments if a.alias_info is not None and a.alias_info.is_write]
        written = [t for t in written if hasattr(t, "device") and t.device.type == "cpu"]
        if not written:   # most ops write no CPU tensor: no event is queried for them
            return
        self._in_flight = [f for f in self._in_flight if not f[1].query()]   # copies done: forget them
        for t in written:
            mine = runs(t)
            hit = next((f for f in self._in_flight if overlap(mine, f[0])), None)
            if hit is not None:
                site, line, path, lineno = user_frame()
                ok = accepted_at(path, lineno, "H2D004") if path else None
                (self.accepted_rewrites if ok else self.rewrites).append(Rewrite(
                    getattr(func, "__name__", str(func)).split(".")[0], t.numel() * t.element_size(), site, line,
                    hit[2], hit[3], accepted=ok))

    # -------------------------------------------------------------------------------- results
    @property
    def flagged(self) -> list[Copy]:
        return [c for c in self.copies if c.flagged]

    def report(self) -> dict:
        """The JSON document's `runtime_check`: every copy seen, and per call site and class."""
        groups: dict[tuple, dict] = {}
        for c in self.copies:
            g = groups.setdefault((c.site_line, c.source_class), {
                "site": c.site or "(no Python frame)", "site_line": c.site_line, "source_class": c.source_class,
                "flagged": c.flagged, "calls": 0, "bytes": 0, "fix": c.fix, "accepted": c.accepted})
            g["calls"] += 1
            g["bytes"] += c.bytes
        rows = sorted(groups.values(), key=lambda g: (not g["flagged"], -g["bytes"], g["site"]))
        return {"checked": len(self.copies), "flagged": len(self.flagged), "devices": list(self.devices),
                "by_site": rows, "copies": [asdict(c) for c in self.copies],
                "rewrites": [asdict(r) for r in self.rewrites],
                # never silent: each site accepted in source, with its reason
                "accepted": [g for g in rows if g["accepted"]] + [asdict(r) for r in self.accepted_rewrites]}


def _bind(func, args, kwargs) -> dict:
    """An op's arguments by name, positional or keyword, whatever the overload."""
    names = [a.name for a in func._schema.arguments]
    return {**dict(zip(names, args)), **kwargs}


def dst_device(bound: dict, name: str):
    """The device a copy goes to (its stream is that device's current one)."""
    import torch   # lazy: torch only when a script runs

    if name == "copy_":
        return bound["self"].device
    other = bound.get("other")
    return torch.device(bound.get("device") or other.device)


def _pinned(t) -> bool:
    try:
        return bool(t.is_pinned())
    except RuntimeError:   # no CUDA in this build: nothing can be pinned
        return False


def user_frame() -> tuple:
    """(site, file:line) of the innermost frame of the user's program (not torch, not nsysh2d, no library),
    named as the trace analysis names Python sites (sites.py); and that frame's file and line, whose comment may
    accept the copy (nsysh2d/rules/allowlist.py)."""
    for frame in reversed(traceback.extract_stack()):
        path = os.path.abspath(frame.filename)
        if _TORCH in path or is_library(frame.filename):
            continue
        return (*site_names(path, frame.name, frame.lineno), frame.filename, frame.lineno)
    return None, None, None, None


def run_script(argv: list[str], devices=("cuda",)) -> tuple[Checker, int]:
    """Runs a Python program in this process under a Checker: `script.py ARGS`, `python script.py ARGS` or
    `python -m module ARGS`. Returns (checker, the program's exit code)."""

    argv = list(argv)
    if argv and re.fullmatch(r"python(\d+(\.\d+)?)?", os.path.basename(argv[0])):
        argv = argv[1:]   # the program runs in this interpreter, under the checker
    if not argv:
        raise BadInput("nothing to run: give SCRIPT.py [ARGS] or -m MODULE [ARGS]")
    module = argv[1] if argv[0] == "-m" and len(argv) > 1 else None
    if module is None and not os.path.isfile(argv[0]):
        raise BadInput(f"{argv[0]}: no such script")

    if importlib.util.find_spec("torch") is None:   # the checker watches PyTorch's dispatcher
        raise BadInput(f"nsysh2d check needs PyTorch in this interpreter ({sys.executable}): pip install torch")
    old_argv, old_path = sys.argv, list(sys.path)
    sys.argv = argv[1:] if module else argv
    sys.path.insert(0, os.getcwd() if module else os.path.dirname(os.path.abspath(argv[0])))
    code = 0
    checker = Checker(tuple(devices))
    try:
        with checker:
            if module:
                runpy.run_module(module, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except Exception as e:   # the script's own failure, not nsysh2d's: kept, traceback and all (Ctrl-C is not)
        checker.crash = e
        code = 1   # what Python exits with on an uncaught exception
    finally:
        sys.argv, sys.path[:] = old_argv, old_path
    return checker, code
