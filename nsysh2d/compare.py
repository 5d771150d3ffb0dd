"""Before/after comparison of two reports, and the CI gate's verdict.

Both work on the JSON-ready report dicts that `Analysis.report` returns (or a stored baseline), so
a gate against a baseline never needs the baseline's trace.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .errors import BadInput

GROUPS = {"kind": ("by_kind", lambda r: f"{r['src_kind']} -> {r['dst_kind']}"),
          "class": ("by_class", lambda r: r["group"]),
          "site": ("by_site", lambda r: r["group"]),
          "nvtx": ("by_nvtx", lambda r: r["group"])}
FIGURES = ("calls", "long_calls", "blocking_calls", "long_ns", "blocking_ns", "p50_ns", "p99_ns", "max_ns", "bytes")


def _per_step(value, steps):
    return value / steps if steps and value is not None else None


def compare(before: dict, after: dict) -> dict:
    """Side-by-side figures per kind, class, call site and NVTX range, with deltas and what
    disappeared (blocking before, not after) or appeared (blocking after, not before)."""
    sb, sa = before["steps"]["steps"], after["steps"]["steps"]
    per_step = bool(sb and sa)
    out = {"before": _meta(before), "after": _meta(after), "per_step": per_step,
           "min_duration_ns": after["min_duration_ns"], "direction": after["direction"]}
    if before["min_duration_ns"] != after["min_duration_ns"] or before["direction"] != after["direction"]:
        raise BadInput("the two reports were analyzed with different --min-duration/--direction")
    out["totals"] = _pair(before["totals"], after["totals"], sb, sa,
                          keys=("calls", "long_calls", "blocking_calls", "long_ns", "blocking_ns", "bytes"))
    disappeared, appeared = [], []
    for g, (field_name, keyf) in GROUPS.items():
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
    return out


def _meta(rep):
    return {"path": rep["path"], "nsys_version": rep.get("nsys_version"), "steps": rep["steps"]["steps"]}


def _pair(rb: dict, ra: dict, sb, sa, keys=FIGURES) -> dict:
    row = {}
    for k in keys:
        vb, va = rb.get(k), ra.get(k)
        row[f"{k}_before"], row[f"{k}_after"] = vb, va
        row[f"{k}_delta"] = (va or 0) - (vb or 0) if (vb is not None or va is not None) else None
    for k in ("long_ns", "blocking_ns", "blocking_calls"):
        if k in keys:
            row[f"{k}_per_step_before"] = _per_step(rb.get(k), sb)
            row[f"{k}_per_step_after"] = _per_step(ra.get(k), sa)
    return row


# ------------------------------------------------------------------------------------------ gate
@dataclass
class Rules:
    max_long_calls: int = 0
    count: str = "blocking"            # blocking | long
    max_blocked_per_step_ns: int | None = None
    kinds: tuple[str, ...] = ()        # source memory kinds (file labels) the rules look at; empty: all
    tolerance: float = 0.10            # baseline growth allowed (fraction)

    # The report fields and wording the rules use for what they count.
    @property
    def count_key(self) -> str:
        return "blocking_calls" if self.count == "blocking" else "long_calls"

    @property
    def time_key(self) -> str:
        return "blocking_ns" if self.count == "blocking" else "long_ns"

    @property
    def what(self) -> str:
        return "long-blocking" if self.count == "blocking" else "long"


@dataclass
class RuleResult:
    name: str
    passed: bool
    message: str
    offenders: list[dict] = field(default_factory=list)


def _kind_ok(kind, rules: Rules) -> bool:
    return not rules.kinds or kind in rules.kinds


def gate(rep: dict, rules: Rules, baseline: dict | None = None) -> list[RuleResult]:
    count_key, what = rules.count_key, rules.what
    results = []
    kinds = [r for r in rep["by_kind"] if _kind_ok(r["src_kind"], rules)]
    n = sum(r[count_key] for r in kinds)
    offenders = [t for t in rep["top"] if _kind_ok(t["src_kind"], rules)
                 and (t["waited_for_gpu"] or rules.count == "long")]
    scope = f" from {'/'.join(rules.kinds)} memory" if rules.kinds else ""
    results.append(RuleResult(
        "max-long-calls", n <= rules.max_long_calls,
        f"{n} {what} {rep['direction']} copies{scope} (>= {rep['min_duration_ns'] / 1000:g} us host time); "
        f"allowed {rules.max_long_calls}", offenders if n > rules.max_long_calls else []))
    if rules.max_blocked_per_step_ns is not None:
        steps = rep["steps"]["steps"]
        blocked = sum(r[rules.time_key] for r in kinds)
        if not steps:
            results.append(RuleResult("max-blocked-per-step", False,
                                      f"no NVTX step ranges matching {rep['steps']['pattern']!r}: cannot compute "
                                      "a per-step figure (use --step-pattern)"))
        else:
            per = blocked / steps
            results.append(RuleResult(
                "max-blocked-per-step", per <= rules.max_blocked_per_step_ns,
                f"{per / 1e6:.3f} ms host time in {what} copies per step over {steps} steps; allowed "
                f"{rules.max_blocked_per_step_ns / 1e6:.3f} ms", offenders if per > rules.max_blocked_per_step_ns else []))
    if baseline is not None:
        results += _against_baseline(rep, baseline, rules)
    return results


def _against_baseline(rep, baseline, rules: Rules) -> list[RuleResult]:
    what, key, t_key = rules.what, rules.count_key, rules.time_key
    if baseline.get("min_duration_ns") != rep["min_duration_ns"] or baseline.get("direction") != rep["direction"]:
        raise BadInput("baseline was made with a different --min-duration/--direction; remake it")
    base_sites = {r["group"]: r for r in baseline.get("by_site", [])}
    now_sites = {r["group"]: r for r in rep.get("by_site", []) if r[key]}
    new = [s for s in now_sites if not (base_sites.get(s, {}).get(key))]
    res = [RuleResult("no-new-sites", not new,
                      f"{len(new)} call site(s) with {key.replace('_', ' ')} not in the baseline"
                      + (": " + "; ".join(new) if new else ""),
                      [{"site": s, key: now_sites[s][key], "long_ns": now_sites[s]["long_ns"]} for s in new])]
    sb, sn = baseline.get("steps", {}).get("steps"), rep["steps"]["steps"]
    grown = []
    for s, r in now_sites.items():
        b = base_sites.get(s)
        if not b or not b.get(key):
            continue
        before = b[t_key] / sb if sb and sn else b[t_key]
        now = r[t_key] / sn if sb and sn else r[t_key]
        if now > before * (1 + rules.tolerance):
            grown.append({"site": s, "before_ns": before, "now_ns": now})
    unit = "per step" if sb and sn else "in total"
    res.append(RuleResult("no-growth", not grown,
                          f"{len(grown)} call site(s) whose {what} copy time {unit} grew more than "
                          f"{rules.tolerance * 100:g}% over the baseline", grown))
    return res


def baseline_from(rep: dict) -> dict:
    keep = ("path", "nsys_version", "schema_version", "direction", "min_duration_ns", "steps", "totals",
            "by_kind", "by_site", "by_class")
    return {"nsysh2d_baseline": 1, **{k: rep[k] for k in keep if k in rep}}


def verdict_dict(rep: dict, results: list[RuleResult]) -> dict:
    return {"path": rep["path"], "passed": all(r.passed for r in results),
            "rules": [asdict(r) for r in results]}
