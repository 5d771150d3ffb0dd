"""Findings: long-blocking copies by kind, call site, true source class, NVTX range and step.

`Analysis` runs the named SQL of queries/ over an opened `Trace`; call sites and source classes
come from the backtraces (decoded here, in `attribution.py`), everything else is SQL.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

from .attribution import attribute
from .errors import BadInput
from .trace import Trace

DIRECTIONS = ("h2d", "d2h", "all")
GROUPS = ("kind", "site", "class", "nvtx", "stream")
DEFAULT_MIN_NS = 100_000
DEFAULT_STEP_PATTERN = r"^step\b"

_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


def parse_duration(text: str) -> int:
    """'100us', '1.5ms', '250000ns', '2s' -> nanoseconds. A bare number is nanoseconds."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(ns|us|µs|ms|s)?\s*", str(text))
    if not m:
        raise BadInput(f"bad duration {text!r}: use a number with ns, us or ms (e.g. 100us)")
    return int(round(float(m.group(1)) * _UNITS[m.group(2) or "ns"]))


def format_ns(ns) -> str:
    if ns is None:
        return "-"
    ns = float(ns)
    if abs(ns) >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if abs(ns) >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if abs(ns) >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns:.0f} ns"


def format_bytes(n) -> str:
    if n is None:
        return "-"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


@dataclass
class Options:
    min_ns: int = DEFAULT_MIN_NS
    direction: str = "h2d"
    top: int = 10
    step_pattern: str = DEFAULT_STEP_PATTERN


class Analysis:
    """The copies of one trace, attributed, with the summaries the CLI and the gate use."""

    def __init__(self, trace: Trace):
        self.trace = trace
        con = trace.con
        con.execute(_sql("nvtx"))
        con.execute(_sql("copies"))
        attribute(trace)
        con.execute(_sql("copies_x"))
        self.warnings = list(trace.warnings)
        for what, n in con.execute(_sql("anomalies")).fetchall():
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
        return self.trace.sql("by_kind", self._params(opts))

    def by_group(self, by: str, opts: Options) -> pl.DataFrame:
        if by == "kind":
            return self.by_kind(opts)
        if by not in GROUPS:
            raise BadInput(f"bad grouping {by!r}: use one of {', '.join(GROUPS)}")
        return self.trace.sql("by_group", self._params(opts, by=by))

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


def _sql(name: str) -> str:
    from .sql import load

    return load(name)
