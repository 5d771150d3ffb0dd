"""Whether two traces can be compared at all: a comparison (compare.py) or a gate against a baseline
(baseline.py) of traces with nothing in common is a verdict on nothing (issue 54). Works on a report's JSON or
a baseline's: both carry gpu (a baseline of nsysh2d <= 0.1.0 has none: not checked), steps, totals and by_*."""
from __future__ import annotations

NO_SITE, NO_RANGE = "(no backtrace)", "(no NVTX range)"   # summary.sql's groups of copies without one


def _keys(rep: dict, field: str, skip: str = "") -> set[str]:
    rows = [r for r in rep.get(field) or [] if r.get("calls")]
    if field == "by_kind":
        return {f"{r.get('src_kind')} -> {r.get('dst_kind')}" for r in rows}
    return {r["group"] for r in rows if r.get("group") != skip}


def incomparable(a: dict, b: dict, names=("the baseline", "this trace")) -> list[str]:
    """Why the traces `a` and `b` cannot be compared (empty: they can): different GPUs; step ranges in one only
    (per-step figures on one side, totals of runs of different length on the other); copies in one only; no
    memory kind, or neither a call site nor an NVTX range, in common."""
    why = []
    ga, gb = a.get("gpu"), b.get("gpu")
    if ga and gb and ga != gb:
        why.append(f"captured on different GPUs ({ga!r} in {names[0]}, {gb!r} in {names[1]})")
    sa, sb = (d.get("steps", {}).get("steps") or 0 for d in (a, b))
    if bool(sa) != bool(sb):
        which = names[0] if sa else names[1]
        why.append(f"step ranges only in {which}: per-step figures cannot be set against totals of a run of "
                   "another length")
    ca, cb = ((d.get("totals") or {}).get("calls") or 0 for d in (a, b))
    if "totals" in a and "totals" in b and bool(ca) != bool(cb):
        why.append(f"no {a.get('direction', 'h2d')} copy calls in {names[1] if ca else names[0]}")
        return why
    ka, kb = _keys(a, "by_kind"), _keys(b, "by_kind")
    if ka and kb and not ka & kb:
        why.append(f"no memory kind in common ({', '.join(sorted(ka))} / {', '.join(sorted(kb))})")
    sites = _keys(a, "by_site", NO_SITE), _keys(b, "by_site", NO_SITE)
    ranges = _keys(a, "by_nvtx", NO_RANGE), _keys(b, "by_nvtx", NO_RANGE)
    named = (sites[0] and sites[1]) or (ranges[0] and ranges[1])
    if named and not sites[0] & sites[1] and not ranges[0] & ranges[1]:
        why.append("no call site and no NVTX range of a copy in common")
    return why
