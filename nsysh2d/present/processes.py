"""The `by process` section of a report: each process (a rank of a multi-process run) on its own, shown when a
trace holds copies of more than one (analyses/by_process.sql)."""
from __future__ import annotations

from .render import Column, Section


def process_section(rep: dict) -> Section | None:
    rows = rep.get("by_process") or []
    if len(rows) < 2:
        return None
    return Section(
        "by process (rank)",
        [Column("pid", "pid", "int"), Column("devices_s", "devices"), Column("calls", "calls", "int"),
         Column("long_calls", "long", "int"), Column("blocking_calls", "blocking", "int"),
         Column("long_ns", "long time", "ns"), Column("blocking_ns", "blocked", "ns"),
         Column("gpu_idle_ns", "GPU idle", "ns", drop=1), Column("steps", "steps", "int"),
         Column("blocking_ns_per_step", "blocked per step", "ns")],
        [{**r, "devices_s": ",".join(str(d) for d in r.get("devices") or []) or "-"} for r in rows],
        note="each process's copies on their own devices; its steps are its own step ranges (the totals above "
             "count the steps of every process).")


def rank_compare_section(doc: dict) -> Section | None:
    """compare: the rank sets side by side (analyses/compare.py's compare_ranks)."""
    rows = doc.get("by_rank") or []
    if not rows:
        return None
    cols = [Column("rank", "rank", "int"), Column("pid_before", "pid before", "int", drop=2),
            Column("pid_after", "pid after", "int", drop=2)]
    for k, title, kind in (("blocking_calls", "blocking", "int"), ("blocking_ns", "blocked", "ns"),
                           ("blocking_ns_per_step", "blocked per step", "ns")):
        cols += [Column(f"{k}_before", f"{title} before", kind), Column(f"{k}_after", f"{title} after", kind),
                 Column(f"{k}_delta", "delta", kind, drop=1)]
    title = ("by rank (rank i of each folder, by name)" if "pairs" in doc else
             "by rank (the i-th process by pid on each side)")
    return Section(title, cols, rows)
