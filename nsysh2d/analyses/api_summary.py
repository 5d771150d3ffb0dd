"""Per CUDA API function: calls and host time statistics over the whole runtime table (what `nsys stats -r
cuda_api_sum` reports), straight from the export: no copy model is built. DuckDB's sqlite scanner reads the
three columns it needs (nameId, start, end) on all cores and counts calls per function and duration as it
scans (queries/analyses/api_durations.sql), so memory holds the distinct durations, not the calls, and the
statistics, median included, are exact (queries/analyses/api_summary.sql). Measured on the 20 M-row file
(2 cores): 1.15 s against 1.35-1.5 s for the rows read through ADBC with nameId and duration packed inside
SQLite (the guards that kept the packing exact cost SQLite more than the scanner's conversion), and no
pyarrow import (0.1 s of start-up)."""
from __future__ import annotations

from ..source.files import damage_is_bad_input
from .spec import Spec


def api_summary(path: str, nsys: str | None = None, use_cache: bool = True) -> dict:
    """{"path", "rows": [{time_pct, total_ns, calls, avg_ns, median_ns, min_ns, max_ns, stddev_ns, name,
    name_id}]}, longest total first."""
    from ..source import open_input   # lazy: model/source import duckdb; a cached result is read without it

    with open_input(path, nsys=nsys, use_cache=use_cache) as trace:
        read_durations(trace)
        return {"path": trace.source or trace.path, "rows": trace.rows("analyses/api_summary")}


def read_durations(trace) -> None:
    # e.g. text where nsys writes integers, which the scanner's type check finds mid-scan
    with damage_is_bad_input(trace.path, "its CUDA runtime table is"):
        trace.run("analyses/api_durations")


def _from_json(d: dict) -> dict:
    if not isinstance(d.get("path"), str) or not all(isinstance(r, dict) for r in d["rows"]):
        raise TypeError("not an api-summary")
    return d


SPEC = Spec(lambda trace, opts, groups: api_summary(trace.path, trace.nsys, use_cache=trace.use_cache),
            lambda d: d, _from_json)
