"""Before/after comparison of two reports: figures side by side per kind, class, call site and NVTX
range, with deltas, and what disappeared or appeared. A typed result (Comparison) with to_json()."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import BadInput
from ..rules.fixes import HOST_ALLOC_APIS, PINNING_COST
from .comparable import incomparable
from .options import COMPARED_GROUPS
from .rules import CAUSES

ROW_KEYS = {"kind": ("by_kind", lambda r: f"{r['src_kind']} -> {r['dst_kind']}"),
          "class": ("by_class", lambda r: r["group"]),
          "site": ("by_site", lambda r: r["group"]),
          "nvtx": ("by_nvtx", lambda r: r["group"])}
FIGURES = ("calls", "long_calls", "blocking_calls", "long_ns", "blocking_ns", "gpu_idle_ns", "p50_ns", "p99_ns",
           "max_ns", "bytes")
PER_STEP = ("long_ns", "blocking_ns", "blocking_calls", "gpu_idle_ns")


def _per_step(row: dict, key: str, steps):
    """Per step: copies during step ranges only (a report's totals carry it; a group row its *_in_steps)."""
    if f"{key}_per_step" in row:
        return row[f"{key}_per_step"]
    value = row.get(f"{key}_in_steps")
    return value / steps if steps and value is not None else None


@dataclass
class Comparison:
    doc: dict   # the JSON contract's "compare" object: before, after, per_step, totals, by_*, ...

    def to_json(self) -> dict:
        return self.doc

    @classmethod
    def from_json(cls, d: dict) -> "Comparison":
        return cls(d)


def compare(before_report, after_report, range_times=None) -> Comparison:
    """Side-by-side figures per kind, class, call site and NVTX range, with deltas and what
    disappeared (blocking before, not after) or appeared (blocking after, not before). range_times: the two
    traces' RangeTimes (analyses/range_times.py), for the wall time of every NVTX range beside the copies."""
    before, after = before_report.to_json(), after_report.to_json()
    sb, sa = before["steps"]["steps"], after["steps"]["steps"]
    per_step = bool(sb and sa)
    out = {"before": _meta(before), "after": _meta(after), "per_step": per_step,
           "min_duration_ns": after["min_duration_ns"], "direction": after["direction"]}
    if (before["min_duration_ns"] != after["min_duration_ns"] or before["direction"] != after["direction"]
            or before.get("calls") != after.get("calls")):
        raise BadInput("the two reports were analyzed with different --min-duration/--direction/--calls")
    out["totals"] = _pair(before["totals"], after["totals"], sb, sa,
                          keys=("calls", "long_calls", "blocking_calls", "long_ns", "blocking_ns", "gpu_idle_ns", "bytes"))
    disappeared, appeared = [], []
    for g in COMPARED_GROUPS:
        field_name, keyf = ROW_KEYS[g]
        if field_name not in before or field_name not in after:
            continue
        b = {keyf(r): r for r in before[field_name]}
        a = {keyf(r): r for r in after[field_name]}
        rows = []
        for key in list(b) + [k for k in a if k not in b]:
            rb, ra = b.get(key, {}), a.get(key, {})
            row = {"key": key, **_pair(rb, ra, sb, sa)}
            was, now = rb.get("blocking_calls", 0) or 0, ra.get("blocking_calls", 0) or 0
            row["status"] = ("gone" if was and not now else "new" if now and not was else
                             "absent before" if not rb else "absent after" if not ra else
                             "changed" if (was, rb.get("blocking_ns")) != (now, ra.get("blocking_ns")) else "same")
            if g in ("site", "kind") and row["status"] == "gone":
                disappeared.append({"group": g, "key": key, "blocking_calls_before": was})
            if g in ("site", "kind") and row["status"] == "new":
                appeared.append({"group": g, "key": key, "blocking_calls_after": now})
            rows.append(row)
        out[f"by_{g}"] = rows
    out["disappeared"], out["appeared"] = disappeared, appeared
    # Traces with nothing in common: the tables above compare nothing alike; said first by every output.
    out["not_comparable"] = incomparable(before, after, ("the before trace", "the after trace"))
    out["comparable"] = not out["not_comparable"]
    # Per step ordinal (copies during steps): what the HTML page plots.
    out["steps_series"] = {side: _step_series(rep) for side, rep in (("before", before), ("after", after))}
    if range_times is not None:   # wall time of every NVTX range: a fix can make a range slower
        out["ranges"], out["range_findings"] = compare_ranges(*(r.to_json() for r in range_times))
        if any(t.functions for t in range_times):   # Kineto: host time per Python function, from its stacks
            out["functions"], out["function_findings"] = compare_functions(*(t.functions for t in range_times))
    out["by_cause"] = compare_causes(before, after)
    ranks = compare_ranks(before.get("by_process") or [], after.get("by_process") or [])
    if ranks:
        out["by_rank"] = ranks
    return Comparison(out)


def compare_causes(before: dict, after: dict) -> list[dict]:
    """Long calls and their host time per cause, before and after (as the three-trace view has them)."""
    b = {r["cause"]: r for r in before.get("by_cause") or []}
    a = {r["cause"]: r for r in after.get("by_cause") or []}
    order = [c for c in CAUSES if c in b or c in a] + sorted(c for c in {*b, *a} if c not in CAUSES)
    return [{"cause": c, **_pair(b.get(c, {}), a.get(c, {}), None, None, keys=("calls", "host_ns"))} for c in order]


RANK_FIGURES = ("long_calls", "blocking_calls", "long_ns", "blocking_ns", "gpu_idle_ns", "steps", "blocking_ns_per_step")


def compare_ranks(before: list[dict], after: list[dict]) -> list[dict]:
    """Rank sets side by side when either trace holds several processes: rank i is the i-th process by pid (pids
    differ from run to run; the order of their start does not)."""
    if len(before) < 2 and len(after) < 2:
        return []
    rows = []
    for i in range(max(len(before), len(after))):
        rb = before[i] if i < len(before) else {}
        ra = after[i] if i < len(after) else {}
        row = {"rank": i, "pid_before": rb.get("pid"), "pid_after": ra.get("pid")}
        for k in RANK_FIGURES:
            vb, va = rb.get(k), ra.get(k)
            row[f"{k}_before"], row[f"{k}_after"] = vb, va
            row[f"{k}_delta"] = va - vb if None not in (vb, va) else None
        rows.append(row)
    return rows


RANGE_FIGURES = ("count", "median_ns", "p90_ns", "max_ns", "total_ns", "kernel_gpu_ns")


def _grew(b: dict, a: dict) -> list[dict]:
    """The API functions whose host time per occurrence of the range grew by >= 10% and >= 10 us."""
    nb, na = b.get("count") or 0, a.get("count") or 0
    if not na:
        return []
    before = {x["api"]: x for x in b.get("apis", [])}
    out = []
    for x in a.get("apis", []):
        y = before.get(x["api"], {"calls": 0, "total_ns": 0})
        per_b = y["total_ns"] / nb if nb else 0
        per_a = x["total_ns"] / na
        if per_a - per_b >= max(0.1 * per_b, 10_000):
            out.append({"api": x["api"], "calls_before": y["calls"], "calls_after": x["calls"],
                        "total_ns_before": y["total_ns"], "total_ns_after": x["total_ns"],
                        "per_range_ns_delta": round(per_a - per_b, 1)})
    return sorted(out, key=lambda r: -r["per_range_ns_delta"])[:5]


def compare_ranges(before: dict, after: dict) -> tuple[list[dict], list[dict]]:
    """Wall time of each NVTX range name (the steps as one row) before and after, with deltas; the API calls
    that grew inside it; and a finding where a range got slower while pinned allocations grew in it."""

    b = {(r["name"], r["is_step"]): r for r in before["ranges"]}
    a = {(r["name"], r["is_step"]): r for r in after["ranges"]}
    rows, findings = [], []
    for key in list(b) + [k for k in a if k not in b]:
        rb, ra = b.get(key, {}), a.get(key, {})
        row = {"name": key[0], "is_step": key[1]}
        for f in RANGE_FIGURES:
            vb, va = rb.get(f), ra.get(f)
            row[f"{f}_before"], row[f"{f}_after"] = vb, va
            row[f"{f}_delta"] = va - vb if None not in (vb, va) else None
        row["grew"] = _grew(rb, ra) if rb and ra else []
        rows.append(row)
        slower = row["median_ns_delta"] is not None and row["median_ns_delta"] > 0.05 * row["median_ns_before"]
        alloc = [g for g in row["grew"] if g["api"] in HOST_ALLOC_APIS]
        if slower and alloc:
            findings.append({"name": key[0], "is_step": key[1], "median_ns_before": row["median_ns_before"],
                             "median_ns_after": row["median_ns_after"], "apis": [g["api"] for g in alloc],
                             "fix": PINNING_COST})
    return rows, findings


def compare_functions(before: list[dict], after: list[dict]) -> tuple[list[dict], list[dict]]:
    """Each function's host time per occurrence before and after, the API calls that grew inside it (new ones, such
    as a cudaHostAlloc that appeared, included), and a finding where it got slower while pinned allocations grew."""

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


def _step_series(rep: dict) -> list[dict]:
    per: dict[int, dict] = {}
    for r in rep.get("by_step") or []:
        if r["step"] is not None:
            s = per.setdefault(r["step"], {"step": r["step"], "blocking_ns": 0, "gpu_idle_ns": 0})
            s["blocking_ns"] += r["blocking_ns"] or 0
            s["gpu_idle_ns"] += r.get("gpu_idle_ns") or 0
    return [per[k] for k in sorted(per)]


def _meta(rep):
    return {"path": rep["path"], "nsys_version": rep.get("nsys_version"), "steps": rep["steps"]["steps"]}


def _pair(rb: dict, ra: dict, sb, sa, keys=FIGURES) -> dict:
    row = {}
    for k in keys:
        vb, va = rb.get(k), ra.get(k)
        row[f"{k}_before"], row[f"{k}_after"] = vb, va
        row[f"{k}_delta"] = (va or 0) - (vb or 0) if (vb is not None or va is not None) else None
        if k.startswith("gpu_idle") and rb and ra and None in (vb, va):
            row[f"{k}_delta"] = None   # not computed on one side: no difference to show
    for k in PER_STEP:
        if k in keys:
            row[f"{k}_per_step_before"] = _per_step(rb, k, sb)
            row[f"{k}_per_step_after"] = _per_step(ra, k, sa)
            b, a = row[f"{k}_per_step_before"], row[f"{k}_per_step_after"]
            row[f"{k}_per_step_delta"] = a - b if None not in (a, b) else None
    return row


MAX_RANGES = 12   # named ranges in the side-by-side table (those in every trace, most wall time first)


def compare_rank_sets(reports, range_times=None) -> Comparison:
    """Two rank sets, one trace per rank (the first half of `reports` before, the second after): the ranks side by
    side (by_rank, as for traces of several processes), then rank i against rank i (pairs)."""
    n = len(reports) // 2
    docs = [r.to_json() for r in reports]
    # one row per rank file, as compare_ranks reads a by_process row (no pid: a file is its rank)
    side = [{"steps": d["steps"]["steps"], **{k: d["totals"].get(k) for k in RANK_FIGURES if k != "steps"}}
            for d in docs]
    times = range_times or [None] * len(reports)
    pairs = [compare(reports[i], reports[n + i], [times[i], times[n + i]] if range_times else None).to_json()
             for i in range(n)]
    return Comparison({"by_rank": compare_ranks(side[:n], side[n:]), "pairs": pairs})


def compare_many(reports, range_times=None) -> Comparison:
    """Three or more traces (variants of one workload): one side-by-side table of their figures (totals, long
    calls per cause, step and NVTX range wall times), then the first trace compared with each other one."""
    docs = [r.to_json() for r in reports]
    rows: list[dict] = []

    def add(figure: str, unit: str, values: list) -> None:
        rows.append({"figure": figure, "unit": unit, "values": values})

    for key, label, unit in (("long_calls", "long copy calls", "int"), ("blocking_calls", "blocking copy calls", "int"),
                             ("long_ns", "host time in long copy calls", "ns"),
                             ("blocking_ns", "host time in blocking copy calls", "ns"),
                             ("gpu_idle_ns", "GPU idle during long copy calls", "ns")):
        add(label, unit, [d["totals"].get(key) for d in docs])
    for cause in CAUSES:
        counts = [next((r["calls"] for r in d.get("by_cause") or [] if r["cause"] == cause), 0) for d in docs]
        if any(counts):
            add(f"long calls: {cause}", "int", counts)
    if range_times:
        per = [{(r["name"], r["is_step"]): r for r in t.ranges} for t in range_times]
        names = [k for k in per[0] if all(k in p for p in per)]
        steps = [k for k in names if k[1]]
        others = sorted((k for k in names if not k[1]), key=lambda k: -per[0][k]["total_ns"])[:MAX_RANGES]
        for k in steps + others:
            label = "steps" if k[1] else f"range {k[0]}"
            add(f"{label}: count", "int", [p[k]["count"] for p in per])
            add(f"{label}: wall p50", "ns", [p[k]["median_ns"] for p in per])
            add(f"{label}: wall p90", "ns", [p[k]["p90_ns"] for p in per])
            add(f"{label}: GPU time of its kernels", "ns", [p[k]["kernel_gpu_ns"] for p in per])
    pairs = [compare(reports[0], r, [range_times[0], t] if range_times else None).to_json()
             for r, t in zip(reports[1:], (range_times or [None] * len(reports))[1:])]
    return Comparison({"traces": [_meta(d) for d in docs], "side_by_side": rows, "pairs": pairs})
