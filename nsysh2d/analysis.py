"""Findings: long-blocking copies by kind, call site, true source class, NVTX range and step.

`Analysis` runs the named SQL of queries/ over an opened `Trace`; call sites and source classes
come from the backtraces (decoded here, in `attribution.py`), everything else is SQL.
"""
from __future__ import annotations

import re

import polars as pl

from .attribution import attribute
from .errors import BadInput
from .sql import load
from .trace import Trace

from .units import (  # noqa: F401 - re-exported: the library's public names
    DEFAULT_MIN_NS, DEFAULT_STEP_PATTERN, DIRECTIONS, GROUPS, Options, format_bytes, format_ns, parse_duration,
)


class Analysis:
    """The copies of one trace, attributed, with the summaries the CLI and the gate use."""

    def __init__(self, trace: Trace):
        self.trace = trace
        con = trace.con
        con.execute(load("nvtx"))
        con.execute(load("copies"))
        attribute(trace)
        con.execute(load("copies_x"))
        self.warnings = list(trace.warnings)
        for what, n in con.execute(load("anomalies")).fetchall():
            if n:
                self.warnings.append(f"{n} {what}")

    @classmethod
    def open(cls, path: str, **kwargs) -> "Analysis":
        return cls(Trace.open(path, **kwargs))

    def copies(self) -> pl.DataFrame:
        """Every async memcpy call with its attribution, one row per API call."""
        return self.trace.con.execute("SELECT * FROM copies_x ORDER BY api_start").pl()

    def _params(self, opts: Options, **extra) -> dict:
        if opts.direction not in DIRECTIONS:
            raise BadInput(f"bad direction {opts.direction!r}: use one of {', '.join(DIRECTIONS)}")
        return {"min_ns": opts.min_ns, "direction": opts.direction, **extra}

    def by_kind(self, opts: Options) -> pl.DataFrame:
        return self.by_group("kind", opts)

    def by_group(self, by: str, opts: Options) -> pl.DataFrame:
        if by not in GROUPS:
            raise BadInput(f"bad grouping {by!r}: use one of {', '.join(GROUPS)}")
        df = self.trace.sql("summary", self._params(opts, by=by))
        return df.drop("group") if by == "kind" else df.drop("src_kind", "dst_kind")

    def top(self, opts: Options) -> pl.DataFrame:
        return self.trace.sql("top", self._params(opts, limit=opts.top))

    def steps(self, pattern: str = DEFAULT_STEP_PATTERN) -> dict:
        try:
            re.compile(pattern)
        except re.error as e:
            raise BadInput(f"bad --step-pattern {pattern!r}: {e}") from None
        row = self.trace.sql("steps", {"pattern": pattern}).row(0, named=True)
        return {"pattern": pattern, "steps": row["steps"], "step_ns": row["step_ns"]}

    def report(self, opts: Options, groups=("site", "class", "nvtx")) -> dict:
        """The JSON-ready report of one trace (the documented contract, see README)."""
        kinds = self.by_kind(opts)
        steps = self.steps(opts.step_pattern)
        totals = {
            "calls": int(kinds["calls"].sum()) if kinds.height else 0,
            "long_calls": int(kinds["long_calls"].sum()) if kinds.height else 0,
            "blocking_calls": int(kinds["blocking_calls"].sum()) if kinds.height else 0,
            "long_ns": int(kinds["long_ns"].sum()) if kinds.height else 0,
            "blocking_ns": int(kinds["blocking_ns"].sum()) if kinds.height else 0,
            "bytes": int(kinds["bytes"].sum()) if kinds.height else 0,
        }
        n = steps["steps"]
        totals["long_ns_per_step"] = totals["long_ns"] / n if n else None
        totals["blocking_ns_per_step"] = totals["blocking_ns"] / n if n else None
        totals["blocking_calls_per_step"] = totals["blocking_calls"] / n if n else None
        meta = self.trace.meta
        return {
            "path": self.trace.path,
            "nsys_version": meta.get("nsys_version"),
            "schema_version": meta.get("schema_version"),
            "gpu": meta.get("gpu"),
            "direction": opts.direction,
            "min_duration_ns": opts.min_ns,
            "steps": steps,
            "totals": totals,
            "by_kind": kinds.to_dicts(),
            **{f"by_{g}": self.by_group(g, opts).to_dicts() for g in groups},
            "top": self.top(opts).to_dicts(),
            "warnings": self.warnings,
        }

    def close(self) -> None:
        self.trace.close()

