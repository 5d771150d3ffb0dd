"""Two compare tables the copies' tables do not show (issue 56): long calls per cause before and after, and, for
Kineto traces, host time per Python function from the trace's own stacks, with the API calls that grew inside
a function (a cudaHostAlloc that appeared) and the finding where a fix made its function slower."""
from __future__ import annotations

from .render import Column, Section, cell
from .safe import Line, Trusted

SHOWN = 10   # function rows in the table (JSON has all)


def _signed(value, kind: str) -> str:
    if not value:
        return "0"
    return ("+" if value > 0 else "-") + cell(abs(value), kind)


def cause_compare_section(result: dict) -> Section | None:
    rows = result.get("by_cause") or []
    if not rows:
        return None
    return Section("long calls by cause", [
        Column("cause", "cause"), Column("calls_before", "calls before", "int"), Column("calls_after", "calls after", "int"),
        Column("host_ns_before", "host time before", "ns"), Column("host_ns_after", "host time after", "ns"),
        Column("delta_s", "delta", "num")],
        [{**r, "delta_s": _signed(r["host_ns_delta"], "ns")} for r in rows],
        note="every long copy call and long pinned allocation on the copy path, one cause each (analyze explains them)")


def functions_section(result: dict) -> Section | None:
    rows = result.get("functions")
    if not rows:
        return None
    findings = result.get("function_findings") or []
    flagged = {f["name"] for f in findings}
    ranked = sorted(rows, key=lambda r: (r["name"] not in flagged, -abs(r["total_ns_delta"] or 0)))
    lines = []
    for r in ranked[:SHOWN]:   # the calls that grew, in the functions that got slower (JSON: every function)
        if (r["median_ns_delta"] or 0) <= 0.05 * (r["median_ns_before"] or 0):
            continue
        for g in r["grew"][:3]:
            lines.append(Line("grew inside {}: {} {} -> {} calls, {} -> {}{}", r["name"], g["api"],
                              Trusted(str(g["calls_before"])), Trusted(str(g["calls_after"])),
                              Trusted(cell(g["total_ns_before"], "ns")), Trusted(cell(g["total_ns_after"], "ns")),
                              Trusted(" (new)" if not g["calls_before"] else "")))
    for f in findings:
        lines.append(Line("slower with {} {}: {} ({} -> {} median per call of the function)", ", ".join(f["apis"]),
                          Trusted("appearing" if f["new"] else "growing"), f["name"],
                          Trusted(cell(f["median_ns_before"], "ns")), Trusted(cell(f["median_ns_after"], "ns"))))
    if findings:
        lines.append(Line("fix: {}", Trusted(findings[0]["fix"])))
    if len(rows) > SHOWN:
        lines.append(Line("{} of {} functions shown (--format json has all)", Trusted(str(SHOWN)), Trusted(str(len(rows)))))
    return Section("host time per Python function (from the trace's stacks)", [
        Column("name", "function"), Column("count_before", "n before", "int"), Column("count_after", "n after", "int"),
        Column("median_ns_before", "median before", "ns"), Column("median_ns_after", "median after", "ns"),
        Column("delta_s", "delta", "num"), Column("total_ns_before", "total before", "ns", drop=1),
        Column("total_ns_after", "total after", "ns", drop=1)],
        [{**r, "delta_s": _signed(r["median_ns_delta"], "ns") if r["median_ns_delta"] is not None else "-"}
         for r in ranked[:SHOWN]],
        note="end - start of each call of the user's functions that made copies or pinned allocations "
             "(python_function events; no NVTX needed); grew: CUDA API host time per call up >= 10% and >= 10 us",
        lines=lines)
