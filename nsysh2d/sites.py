"""How a Python call site is named, once for the trace analysis and the runtime checker: the first frame of
the user's program, as `parent/file.py:function` (folders above the file's parent left out, so that a site
matches across machines and checkouts) and `parent/file.py:line`. Light: no imports beyond re."""
from __future__ import annotations

import re

PY_LIBRARY = re.compile(r"/(site|dist)-packages/|/lib/python3[.\d]*/|^<frozen|^<string>")


# nsysh2d's own frames (the runtime checker's dispatch mode sits between the user's copy and CUDA) are
# never the user's program.
OWN = re.compile(r"/nsysh2d/(runtime|cli_check|pytest_plugin)\.py$")


def is_library(file: str) -> bool:
    return bool(PY_LIBRARY.search(file or "") or OWN.search((file or "").replace("\\", "/")))


def site_names(file: str, function: str, line: int) -> tuple[str, str]:
    tail = "/".join(file.replace("\\", "/").split("/")[-2:])
    return f"{tail}:{function}", f"{tail}:{line}"
