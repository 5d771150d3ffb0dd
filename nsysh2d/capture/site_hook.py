"""Call sites and source classes of host-to-device copies, recorded in the trace itself without sampling.

`python -m nsysh2d.capture.site_hook SCRIPT ARGS` (what `nsysh2d profile` runs under nsys or torch.profiler)
runs SCRIPT as __main__ with `Tensor.to`, `Tensor.cuda` and `Tensor.copy_` wrapped: a copy from CPU memory to a
CUDA device runs inside an NVTX range named `nsysh2d.h2d <class> <function> <parent/file.py:line>` (sites.py), so
the trace holds each copy's call line and source class (pageable, pinned, pinned_strided, file_backed) where nsys
would need CPU sampling and backtraces (10x the capture time, GBs of raw data). Under torch.profiler the NVTX
pushes are mirrored as record_function ranges (torch_profile.py). The class follows the rules of PyTorch's CUDA
copy (runtime.py); file_backed: the source's memory is a file mapping (/proc/self/maps).

What it cannot see: copies made below Python (C++ extensions, CuPy, torch internals that never call these
methods); the trace still has those copies, without a site, and the report says why.
Imports torch only when run (no duckdb, polars or rich): it runs on a bare GPU box.
"""
from __future__ import annotations

import os
import runpy
import sys

from ..rules.sites import hook_range_name, is_library, site_names
from .copy_class import FileMaps, contiguous_strides, dense, source_class

_TORCH = os.sep + "torch" + os.sep
_OWN = os.path.dirname(os.path.abspath(__file__))


class Hook:
    """Wraps the copy methods of torch.Tensor; `install()` once per process. `devices`: the device types whose
    copies from the CPU are recorded (tests watch `meta`, which needs no GPU)."""

    def __init__(self, torch, devices=("cuda",)):
        self.torch, self.devices = torch, tuple(devices)
        self.maps = FileMaps()
        self._lib: dict[str, bool] = {}

    def pinned(self, t) -> bool:
        try:
            return bool(t.is_pinned())
        except RuntimeError:   # no CUDA in this build: nothing can be pinned
            return False

    def site(self) -> tuple[str, str]:
        """(function, parent/file.py:line) of the innermost frame of the user's program."""
        f = sys._getframe(2)
        while f is not None:
            file = f.f_code.co_filename
            lib = self._lib.get(file)
            if lib is None:
                path = os.path.abspath(file)
                lib = self._lib[file] = (_TORCH in path or path.startswith(_OWN) or is_library(file))
            if not lib:
                return f.f_code.co_name, site_names(os.path.abspath(file), f.f_code.co_name, f.f_lineno)[1]
            f = f.f_back
        return "?", "?:0"

    def source_class(self, src, dst_shape, dst_strides, dst_dtype) -> str:
        if not self.pinned(src):
            return "file_backed" if self.maps.is_file(src.data_ptr()) else "pageable"
        return source_class(tuple(src.shape), src.stride(), src.dtype, True, tuple(dst_shape), tuple(dst_strides),
                            dst_dtype)

    def to_class(self, src, dtype, memory_format) -> str:
        """The class of `src.to(device, dtype, memory_format=...)`: the destination keeps a dense source's
        strides (preserve_format), else is contiguous (what empty_like gives, without making it)."""
        torch = self.torch
        if memory_format in (None, torch.preserve_format) and dense(src.shape, src.stride()):
            strides = src.stride()
        elif memory_format in (None, torch.preserve_format, torch.contiguous_format):
            strides = contiguous_strides(src.shape)
        else:
            strides = torch.empty_like(src, device="meta", memory_format=memory_format).stride()
        return self.source_class(src, src.shape, strides, dtype or src.dtype)

    def around(self, cls: str, call):
        function, line = self.site()
        nvtx = self.torch.cuda.nvtx
        nvtx.range_push(hook_range_name(cls, function, line))
        try:
            return call()
        finally:
            nvtx.range_pop()

    def install(self) -> None:
        torch, T = self.torch, self.torch.Tensor
        to, cuda, copy_ = T.to, T.cuda, T.copy_
        parse_to = torch._C._nn._parse_to
        hook, devices = self, self.devices

        def hooked_to(self, *args, **kwargs):
            if self.device.type == "cpu" and self.numel():
                try:
                    device, dtype, _nb, fmt = parse_to(*args, **kwargs)
                except Exception:   # let .to raise its own error
                    device = None
                if device is not None and device.type in devices:
                    return hook.around(hook.to_class(self, dtype, fmt), lambda: to(self, *args, **kwargs))
            return to(self, *args, **kwargs)

        def hooked_cuda(self, *args, **kwargs):
            if self.device.type == "cpu" and self.numel() and "cuda" in devices:
                return hook.around(hook.to_class(self, None, kwargs.get("memory_format")),
                                   lambda: cuda(self, *args, **kwargs))
            return cuda(self, *args, **kwargs)

        def hooked_copy_(self, src, *args, **kwargs):
            if (self.device.type in devices and isinstance(src, torch.Tensor) and src.device.type == "cpu"
                    and src.numel()):
                cls = hook.source_class(src, self.shape, self.stride(), self.dtype)
                return hook.around(cls, lambda: copy_(self, src, *args, **kwargs))
            return copy_(self, src, *args, **kwargs)

        T.to, T.cuda, T.copy_ = hooked_to, hooked_cuda, hooked_copy_
        self.originals = (to, cuda, copy_)

    def uninstall(self) -> None:
        T = self.torch.Tensor
        T.to, T.cuda, T.copy_ = self.originals


def install(devices=("cuda",)) -> Hook:
    import torch   # lazy: torch is imported in the workload's process only

    hook = Hook(torch, devices)
    hook.install()
    return hook


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m nsysh2d.capture.site_hook SCRIPT [ARGS]", file=sys.stderr)
        return 2
    script = argv[0]
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    install()
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
