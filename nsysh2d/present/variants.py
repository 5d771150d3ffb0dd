"""The side-by-side table of `compare` over three or more traces (analyses/compare.py's compare_many)."""
from __future__ import annotations

from .render import Column, Section, cell
from .safe import Line


def side_by_side_section(doc: dict) -> Section:
    n = len(doc["traces"])
    cols = [Column("figure", "figure")] + [Column(str(i + 1), str(i + 1), "num") for i in range(n)]
    rows = [{"figure": r["figure"], **{str(i + 1): cell(v, r["unit"]) for i, v in enumerate(r["values"])}}
            for r in doc["side_by_side"]]
    legend = "; ".join(f"{i + 1} = {{}}" for i in range(n))

    return Section("variants side by side", cols, rows,
                   note="wall p50/p90: per occurrence of the range (the steps: per step); GPU time of its kernels: "
                        "of the kernels launched from inside it. Then the first trace against each other one.",
                   lines=[Line(legend, *(t["path"] for t in doc["traces"]))])
