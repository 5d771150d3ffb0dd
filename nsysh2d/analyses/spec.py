"""What the registry (registry.py) knows of one analysis; each analysis module defines its SPEC with it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Spec:
    compute: Callable      # (trace, opts, groups) -> result; trace: the facade (its .model, .path, .nsys, .use_cache)
    to_json: Callable      # result -> dict
    from_json: Callable    # dict -> result; raises KeyError/TypeError/ValueError/AttributeError on another shape
