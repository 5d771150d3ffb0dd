"""Per CUDA API function: calls and host time statistics over the whole runtime table (what `nsys stats -r
cuda_api_sum` reports), straight from the export: no copy model is built. Every runtime row is read once, in
parts on all cores (source/ingest.py), as one packed integer per call (nameId and duration, computed inside
SQLite: queries/source/sqlite_api_durations.sql); DuckDB counts each part per function and duration as it
arrives, so memory holds the distinct durations, not the calls, and the statistics, median included, are
exact (queries/analyses/api_summary.sql)."""
from __future__ import annotations

PART_ROWS = 2_500_000  # runtime rows per part: ~20 MB of Arrow in flight per reader thread
DURATION_MAX = (1 << 40) - 1  # the packed duration's 40 bits (source/sqlite_api_durations.sql)


def api_summary(path: str, nsys: str | None = None) -> dict:
    """{"path", "rows": [{time_pct, total_ns, calls, avg_ns, median_ns, min_ns, max_ns, stddev_ns, name,
    name_id}]}, longest total first."""
    from ..source import Trace

    trace = Trace.open(path, nsys=nsys)
    try:
        read_durations(trace)
        return {"path": trace.source or trace.path, "rows": trace.rows("analyses/api_summary")}
    finally:
        trace.close()


def read_durations(trace) -> None:
    from ..source import ingest
    from ..source.schema import TIME_LIMIT
    from ..source.sql import condition

    trace.run("analyses/api_durations")
    packed = condition("source/sqlite_api_durations",
                       {"time_limit": TIME_LIMIT, "start_limit": TIME_LIMIT - DURATION_MAX})
    unpacked = 0
    with ingest.Parts(trace, ingest.Read("runtime", select={"k": packed}, part_rows=PART_ROWS)) as parts:
        for part in parts:
            unpacked += part.column("k").null_count
            _count(trace, part, "analyses/api_durations_part")
    if unpacked:
        # A second scan, but only for files with missing times or durations beyond 18 minutes.
        rest = ingest.Read("runtime", f"({packed}) IS NULL", ["name_id", "start", "end"], {"name_id": "INTEGER"},
                           part_rows=PART_ROWS)
        with ingest.Parts(trace, rest) as parts:
            for part in parts:
                _count(trace, part, "analyses/api_durations_rest")


def _count(trace, part, query: str) -> None:
    trace.con.register("api_part", part)
    try:
        trace.run(query)
    finally:
        trace.con.unregister("api_part")
