"""How a Python call site is named, once for the trace analysis and the runtime checker: the first frame of
the user's program, as `parent/file.py:function` (folders above the file's parent left out, so that a site
matches across machines and checkouts) and `parent/file.py:line`. Light: no imports beyond re and sys."""
from __future__ import annotations

import re
import sys

PY_LIBRARY = re.compile(r"/(site|dist)-packages/|/lib/python3[.\d]*/|^<frozen|^<string>")


# nsysh2d's own frames (the runtime checker's dispatch mode sits between the user's copy and CUDA) are
# never the user's program.
OWN = re.compile(r"/nsysh2d/(runtime|cli_check|pytest_plugin|torch_profile)\.py$")


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
