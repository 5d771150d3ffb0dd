"""Host time per Python function of a Kineto trace, before and after (issue 56): a fix can move cost into the
function it fixed (`.pin_memory()` paying cudaHostAlloc) while the copies it removed read as gone. From the
trace's own python_function events, not from NVTX ranges (torch.profiler traces often have none): each user
function that encloses a copy call or a host allocation, its occurrences' durations and the API calls inside."""
from __future__ import annotations

import re

from ..sites import is_library, resolve

PY_FRAME = re.compile(r"(.+)\((\d+)\): (.+)")
MAX_FUNCTIONS = 30


def function_times(trace) -> list[dict]:
    """[{name, count, total_ns, median_ns, p90_ns, max_ns, apis: [{api, calls, total_ns, gpu_ns}]}] of a Kineto
    trace (empty for an nsys export: its Python frames are samples at the calls, not functions with durations).
    name: `parent/file.py:function`, the file resolved as call sites are (sites.resolve)."""
    if trace.format != "kineto":
        return []
    fns = []
    for i, value in trace.con.execute("SELECT id, value FROM n.strings WHERE id IN (SELECT DISTINCT name_id FROM k_py)"
                                      ).fetchall():
        m = PY_FRAME.fullmatch(value or "")
        if m and not is_library(m.group(1)):
            tail = "/".join(resolve(m.group(1)).split("/")[-2:])
            fns.append((i, f"{tail}:{m.group(3)}"))
    trace.frame("user_fns", ["name_id", "fn"], ["int64", "string"], fns)
    rows = trace.rows("analyses/function_times")[:MAX_FUNCTIONS]
    apis: dict[str, list[dict]] = {}
    for r in trace.rows("analyses/function_apis"):
        apis.setdefault(r["name"], []).append({k: r[k] for k in ("api", "calls", "total_ns", "gpu_ns")})
    return [{**r, "apis": apis.get(r["name"], [])} for r in rows]


def compare_functions(before: list[dict], after: list[dict]) -> tuple[list[dict], list[dict]]:
    """Each function's host time per occurrence before and after, the API calls that grew inside it (new ones, such
    as a cudaHostAlloc that appeared, included), and a finding where it got slower while pinned allocations grew."""
    from ..fixes import HOST_ALLOC_APIS, PINNING_COST
    from .compare import RANGE_FIGURES, _grew

    b, a = {r["name"]: r for r in before}, {r["name"]: r for r in after}
    rows, findings = [], []
    for name in list(b) + [k for k in a if k not in b]:
        rb, ra = b.get(name, {}), a.get(name, {})
        row = {"name": name}
        for f in RANGE_FIGURES[:-1]:
            vb, va = rb.get(f), ra.get(f)
            row[f"{f}_before"], row[f"{f}_after"] = vb, va
            row[f"{f}_delta"] = va - vb if None not in (vb, va) else None
        row["grew"] = _grew(rb, ra) if rb and ra else []
        row["new_apis"] = [g["api"] for g in row["grew"] if not g["calls_before"]]
        rows.append(row)
        slower = row["median_ns_delta"] is not None and row["median_ns_delta"] > 0.05 * row["median_ns_before"]
        alloc = [g for g in row["grew"] if g["api"] in HOST_ALLOC_APIS]
        if slower and alloc:
            findings.append({"name": name, "median_ns_before": row["median_ns_before"],
                             "median_ns_after": row["median_ns_after"], "apis": [g["api"] for g in alloc],
                             "new": [g["api"] for g in alloc if not g["calls_before"]], "fix": PINNING_COST})
    return rows, findings
