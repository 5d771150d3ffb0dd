"""Per CUDA API function: calls and host time statistics over the whole runtime table (what `nsys stats -r
cuda_api_sum` reports), straight from the export: no copy model is built, DuckDB's sqlite scanner reads the
runtime table's needed columns once and groups on the integer nameId (queries/analyses/api_summary.sql)."""
from __future__ import annotations


def api_summary(path: str, nsys: str | None = None) -> dict:
    """{"path", "rows": [{time_pct, total_ns, calls, avg_ns, median_ns, min_ns, max_ns, stddev_ns, name,
    name_id}]}, longest total first."""
    from ..source import Trace

    trace = Trace.open(path, nsys=nsys)
    try:
        return {"path": trace.source or trace.path, "rows": trace.rows("analyses/api_summary")}
    finally:
        trace.close()
