"""Payload threshold of blocking H2D copies, from a workloads/h2d_sweep.py trace.

For each series (source variant x GPU backlog x copies in flight) the threshold is the smallest
payload from which on the call waits for the backlog in most repeats; the spread is the range of
the same figure taken per repeat, and `below` the largest payload under it that did not wait.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import BadInput
from .spec import Spec

if TYPE_CHECKING:
    import polars as pl


def sweep_rows(model) -> pl.DataFrame:
    model.ensure_backlog()  # every call: `waited` needs each one's backlog
    df = model.trace.sql("analyses/sweep")
    if df.height == 0:
        raise BadInput(f"{model.path}: no NVTX ranges named 'h2d variant=... bytes=... backlog_us=...' "
                       "(capture workloads/h2d_sweep.py under nsysh2d profile)")
    return df


def _first_from(sizes_waited: list[tuple[int, bool | None]]) -> int | None:
    """Smallest size such that it and every larger size waited (sizes that cannot tell are skipped)."""
    first = None
    for size, waited in sorted(sizes_waited, key=lambda x: x[0], reverse=True):
        if waited is None:
            continue
        if not waited:
            break
        first = size
    return first


@dataclass
class ThresholdResult:
    """The thresholds of one sweep trace: one series per (variant, backlog, copies in flight), each a dict
    with the documented keys of `threshold --format json` (variant, backlog_us, inflight, threshold_bytes, ...)."""
    path: str
    series: list[dict]

    def to_json(self) -> dict:
        return {"path": self.path, "thresholds": self.series}

    @classmethod
    def from_json(cls, d: dict) -> "ThresholdResult":
        if not isinstance(d.get("thresholds"), list):
            raise TypeError("no thresholds list")
        return cls(d["path"], d["thresholds"])


def threshold_report(path: str, nsys: str | None = None, use_cache: bool = True) -> ThresholdResult:
    """The thresholds of one sweep trace."""
    from ..model import open_model   # lazy: model/source import duckdb; a cached result is read without it

    with open_model(path, nsys=nsys, use_cache=use_cache) as model:
        return ThresholdResult(path, thresholds(sweep_rows(model)))


def thresholds(rows: pl.DataFrame) -> list[dict]:
    import polars as pl   # lazy: a cached ThresholdResult is read back without polars (runner/jobs.py)

    out = []
    for (variant, backlog_us, inflight), g in rows.group_by(["variant", "backlog_us", "inflight"], maintain_order=True):
        per_size = g.group_by("payload").agg(
            pl.col("waited").mean().alias("share"), pl.col("host_ns").median().alias("host_ns"),
            pl.col("backlog_ns").median().alias("backlog_ns")).sort("payload")
        th = _first_from([(r["payload"], None if r["share"] is None else r["share"] > 0.5)
                          for r in per_size.iter_rows(named=True)])
        per_rep = []
        for _rep, rg in g.group_by("rep"):
            t = _first_from([(r["payload"], r["waited"]) for r in rg.iter_rows(named=True)])
            if t is not None:
                per_rep.append(t)
        below = None
        if th is not None:
            smaller = [r["payload"] for r in per_size.iter_rows(named=True) if r["payload"] < th]
            below = max(smaller) if smaller else None
        waited_rows = per_size.filter(pl.col("payload") >= th) if th is not None else per_size.head(0)
        if g["waited"].null_count() == g.height:
            th, below, per_rep = None, None, []
        out.append({
            "undetermined": bool(g["waited"].null_count() == g.height),
            "variant": variant, "backlog_us": backlog_us, "inflight": inflight,
            "threshold_bytes": th, "below_bytes": below,
            "spread_bytes": [min(per_rep), max(per_rep)] if per_rep else None,
            "repeats": g["rep"].n_unique(), "repeats_with_threshold": len(per_rep),
            "sizes": per_size["payload"].to_list(),
            "median_host_ns": [int(x) for x in per_size["host_ns"].to_list()],
            "blocked_over_backlog": (statistics.median(
                [h / b for h, b in zip(waited_rows["host_ns"].to_list(), waited_rows["backlog_ns"].to_list()) if b])
                if waited_rows.height else None),
        })
    return out


SPEC = Spec(lambda trace, opts, groups: ThresholdResult(trace.path, thresholds(sweep_rows(trace.model))),
            ThresholdResult.to_json, ThresholdResult.from_json)
