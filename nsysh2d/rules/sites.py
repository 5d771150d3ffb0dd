"""How a Python call site is named, once for the trace analysis and the runtime checker: the first frame of
the user's program, as `parent/file.py:function` (folders above the file's parent left out, so that a site
matches across machines and checkouts) and `parent/file.py:line`. A torch.profiler (Kineto) frame carries the
line where its function starts, not the call's: kineto_site_names says so (docs/kineto.md). Light: no imports
beyond os, re and sys."""
from __future__ import annotations

import os
import re
import sys

PY_LIBRARY = re.compile(r"/(site|dist)-packages/|/lib/python3[.\d]*/|^<frozen|^<string>|^<built-in>")
BUILT_IN = "<built-in>"   # the file of a Kineto frame that is a C function (`<built-in method to of ...>`)


# nsysh2d's own frames (the runtime checker's dispatch mode sits between the user's copy and CUDA) are
# never the user's program: where they are now (issue 55's wings), and where traces captured before put them.
OWN = re.compile(r"/nsysh2d/(checker/runtime|checker/pytest_plugin|cli/check|capture/torch_profile|capture/site_hook"
                 r"|runtime|cli_check|pytest_plugin|torch_profile)\.py$")


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


def kineto_site_names(file: str, function: str, line: int, callee: tuple[str, str] | None) -> tuple[str, str]:
    """(site, site_line) of a Kineto frame of the user's program. The trace knows the function and the line it
    starts on, and what it called (`callee`: the frame inside it, (function, file)): the site is
    `parent/file.py:function > callee`, so that the model's `.to(dev)` at init (through `module.py:to`) and the
    batch's `.to()` in the same loop are two sites; the line is given as `def@N` (where the function starts),
    never as a call line. The file is first resolved against the source root (resolve)."""
    path = resolve(file)
    tail = "/".join(path.split("/")[-2:])
    inner = ""
    if callee:
        fn, cfile = callee
        inner = f" > {fn}()" if cfile == BUILT_IN else f" > {cfile.replace(chr(92), '/').split('/')[-1]}:{fn}"
    starts = f" def@{line}" if line > 0 and function != "<module>" else ""
    return f"{tail}:{function}{inner}", f"{path}:{function}{starts}{inner}"


KINETO_DEF = re.compile(r"(.+\.py):(.+?) def@(\d+)(?: > .*)?")   # a kineto_site_names site_line


def source_root() -> str:
    """Where relative Kineto file names are looked up: --source-root (NSYSH2D_SOURCE_ROOT), else the current folder."""
    return os.path.realpath(os.environ.get("NSYSH2D_SOURCE_ROOT") or os.getcwd())


_SKIP_DIRS = re.compile(r"^(\.|__pycache__$|node_modules$|site-packages$|venv$|env$|build$|dist$)")
_resolved: dict[tuple[str, str], str] = {}


def resolve(file: str) -> str:
    """A file as torch names it (relative to the sys.path entry it was found under: `qwen3vl_inputs.py`) as the
    path relative to the source root (`workloads/qwen3vl_inputs.py`) when exactly one file there ends so (looked
    for at the root and two folders down, hidden and environment folders left out); else as given."""
    file = (file or "").replace("\\", "/")
    root = source_root()
    key = (root, file)
    if key not in _resolved:
        _resolved[key] = _find(root, file)
    return _resolved[key]


def _find(root: str, file: str) -> str:
    if not file.endswith(".py") or file.startswith("<"):
        return file
    if os.path.isabs(file):
        rel = os.path.relpath(file, root)
        return file if rel.startswith("..") else rel.replace(os.sep, "/")
    if os.path.isfile(os.path.join(root, file)):
        return file
    found, level = [], [""]
    for _depth in range(2):
        below = []
        for d in level:
            try:
                names = sorted(os.listdir(os.path.join(root, d)))
            except OSError:
                continue
            below += [f"{d}{n}/" for n in names if not _SKIP_DIRS.match(n) and os.path.isdir(os.path.join(root, d, n))]
        found += [f"{d}{file}" for d in below if os.path.isfile(os.path.join(root, d, file))]
        level = below[:2000]   # bounded: a huge checkout is searched only this far
    return found[0] if len(found) == 1 else file
