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
