"""How a Python call site is named, once for the trace analysis and the runtime checker: the first frame of
the user's program, as `parent/file.py:function` (folders above the file's parent left out, so that a site
matches across machines and checkouts) and `parent/file.py:line`. Light: no imports beyond re and sys."""
from __future__ import annotations

import re
import sys

PY_LIBRARY = re.compile(r"/(site|dist)-packages/|/lib/python3[.\d]*/|^<frozen|^<string>")


# nsysh2d's own frames (the runtime checker's dispatch mode sits between the user's copy and CUDA) are
# never the user's program.
OWN = re.compile(r"/nsysh2d/(runtime|cli_check|pytest_plugin|torch_profile|capture/site_hook)\.py$")


# torch.profiler (Kineto) names a frame's file relative to the sys.path entry it was found under
# (`torch/nn/modules/module.py`, `contextlib.py`, `qwen3vl.py`): a relative path is a library's when its first part
# is a standard-library module or one of the frameworks below the user's program.
FRAMEWORKS = {"torch", "torchvision", "torchaudio", "functorch", "triton", "numpy", "_pytest", "pluggy", "nsysh2d"}


def is_library(file: str) -> bool:
    file = (file or "").replace("\\", "/")
    if PY_LIBRARY.search(file) or OWN.search(file):
        return True
    if file and not file.startswith(("/", "<")) and ":" not in file[:3]:
        top = file.split("/")[0].removesuffix(".py")
        return top in FRAMEWORKS or top in sys.stdlib_module_names
    return False


def site_names(file: str, function: str, line: int) -> tuple[str, str]:
    tail = "/".join(file.replace("\\", "/").split("/")[-2:])
    return f"{tail}:{function}", f"{tail}:{line}"


# `nsysh2d profile` runs the workload with a hook (capture/site_hook.py) that opens an NVTX range around every
# copy from CPU memory to a GPU made through PyTorch, named `nsysh2d.h2d <class> <function> <parent/file.py:line>`:
# the call site and source class without sampling. The analysis reads it back here (the name is a trace string:
# untrusted, parsed, never evaluated).
HOOK_PREFIX = "nsysh2d.h2d "
HOOK_CLASSES = ("pageable", "pinned", "pinned_strided", "file_backed")


def hook_range_name(source_class: str, function: str, site_line: str) -> str:
    return f"{HOOK_PREFIX}{source_class} {function.replace(' ', '_') or '?'} {site_line}"


def parse_hook_range(name: str) -> tuple[str, str, str] | None:
    """(source class, site `parent/file.py:function`, site line `parent/file.py:line`) of a hook range's name,
    or None when it is not one (an unknown class, a missing part, a site line without `:line`)."""
    if not name or not name.startswith(HOOK_PREFIX):
        return None
    parts = name[len(HOOK_PREFIX):].split(" ", 2)
    if len(parts) != 3 or parts[0] not in HOOK_CLASSES:
        return None
    cls, function, site_line = parts
    tail, sep, line = site_line.rpartition(":")
    if not sep or not tail or not line.isdigit():
        return None
    return cls, f"{tail}:{function}", site_line
