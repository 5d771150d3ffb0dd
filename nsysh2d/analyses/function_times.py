"""Host time per Python function of a Kineto trace, before and after (issue 56): a fix can move cost into the
function it fixed (`.pin_memory()` paying cudaHostAlloc) while the copies it removed read as gone. From the
trace's own python_function events, not from NVTX ranges (torch.profiler traces often have none): each user
function that encloses a copy call or a host allocation, its occurrences' durations and the API calls inside
(compare.compare_functions pairs them)."""
from __future__ import annotations

import re

from ..rules.sites import is_library, resolve

PY_FRAME = re.compile(r"(.+)\((\d+)\): (.+)")
MAX_FUNCTIONS = 30


def function_times(trace) -> list[dict]:
    """[{name, count, total_ns, median_ns, p90_ns, max_ns, apis: [{api, calls, total_ns, gpu_ns}]}] of a Kineto
    trace (empty for an nsys export: its Python frames are samples at the calls, not functions with durations).
    name: `parent/file.py:function`, the file resolved as call sites are (sites.resolve)."""
    if not trace.input.function_spans:
        return []
    fns = []
    for r in trace.rows("analyses/function_names"):
        i, m = r["id"], PY_FRAME.fullmatch(r["value"] or "")
        if m and not is_library(m.group(1)):
            tail = "/".join(resolve(m.group(1)).split("/")[-2:])
            fns.append((i, f"{tail}:{m.group(3)}"))
    trace.frame("user_fns", ["name_id", "fn"], ["int64", "string"], fns)
    rows = trace.rows("analyses/function_times")[:MAX_FUNCTIONS]
    apis: dict[str, list[dict]] = {}
    for r in trace.rows("analyses/function_apis"):
        apis.setdefault(r["name"], []).append({k: r[k] for k in ("api", "calls", "total_ns", "gpu_ns")})
    return [{**r, "apis": apis.get(r["name"], [])} for r in rows]
