"""Findings: long-blocking copies by kind, call site, true source class, NVTX range and step.

`Analysis` reads what it needs out of an opened `Trace` (the copy calls through ingest.py: filtered
inside SQLite, in parallel, part by part into a compressed store) and runs the named SQL of queries/
over it; call sites and source classes come from the backtraces (decoded in `attribution.py`),
everything else is SQL. Work whose cost grows with the whole trace but that only a few calls need
(the GPU backlog behind a call) runs on demand, for those calls only. NSYSH2D_TIMING=1 prints the
time, CPU time and peak RSS of each stage on stderr.
"""
from __future__ import annotations

import os
import re
import sys
import time
from contextlib import contextmanager

from . import ingest
from .attribution import attribute
from .errors import BadInput
from .sql import condition, load
from .trace import Trace

from .units import (  # noqa: F401 - re-exported: the library's public names
    DEFAULT_MIN_NS, DEFAULT_STEP_PATTERN, DIRECTIONS, GROUPS, Options, format_bytes, format_ns, parse_duration,
)


MAX_WORK_WINDOWS = 64
PART_ROWS = 250_000  # rows per part added to the store: bounds the memory of what is in flight


class Analysis:
    """The copies of one trace, attributed, with the summaries the CLI and the gate use."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self._summary_cache: dict = {}
        self._backlog_asked: set = set()
        con = trace.con
        # The calls' reads start now, on their own threads, and overlap the NVTX and activity stages.
        with self._read_calls() as calls:
            with _stage("nvtx ranges"):
                con.execute(load("nvtx"))
            with _stage("read and join copy calls"):
                self._join_copies(calls)
        with _stage("attribution"):
            attribute(trace)
        con.execute(load("copies_x"))
        self.warnings = list(trace.warnings)
        with _stage("anomalies"):
            for what, n in con.execute(load("anomalies")).fetchall():
                if n:
                    self.warnings.append(f"{n} {what}")

    @classmethod
    def open(cls, path: str, **kwargs) -> "Analysis":
        return cls(Trace.open(path, **kwargs))

    def _read_calls(self) -> ingest.Parts:
        """The runtime rows of the async memcpy calls, in parts (ingest.py), reading from now on."""
        return ingest.Parts(self.trace, ingest.Read(
            "runtime", condition("sqlite_copy_calls"),
            ["start", "end", "event_class", "global_tid", "correlation_id", "name_id", "callchain_id"],
            {"event_class": "INTEGER", "name_id": "INTEGER"},
            # About one runtime row in ten is an async memcpy in the exports measured: parts of 10x the rows.
            part_rows=10 * PART_ROWS))

    def _join_copies(self, calls: ingest.Parts) -> None:
        """Tables copies, memcpy_raw and api_raw (store.sql), filled part by part as the calls arrive:
        memory holds the compressed tables and the parts in flight, not the raw rows."""
        con = self.trace.con
        con.execute(load("store"))
        # Every activity row first, which each part's join needs. DuckDB's scanner is the faster
        # reader of a whole table (docs/benchmarks.md).
        con.execute(load("store_memcpy"))
        con.execute("CHECKPOINT store")
        for part in calls:
            con.register("api_part", part)
            con.execute(load("copies_part"))
            con.unregister("api_part")
            del part
            con.execute("CHECKPOINT store")  # compresses what this part added
        con.execute(load("copies"))
        multi, missing = con.execute("SELECT (SELECT count(*) FROM copy_keys_multi), "
                                     "api_rows_without_activity FROM copy_stats").fetchone()
        if multi or missing:
            con.execute(load("copies_fold"))
        con.execute("DROP TABLE api_raw")
        con.execute("CHECKPOINT store")
        con.execute(load("labels"))

    # ------------------------------------------------------------------ backlog, on demand
    def ensure_backlog(self, min_ns: int = 0, direction: str = "all", limit: int | None = None) -> None:
        """Compute the stream backlog of the calls a report with these options needs (see
        backlog_probes.sql); min_ns=0 and limit=None: of every call."""
        if (min_ns, direction, limit) in self._backlog_asked:
            return
        self._backlog_asked.add((min_ns, direction, limit))
        con = self.trace.con
        con.execute(load("backlog_probes"), {"min_ns": min_ns, "direction": direction, "limit": limit})
        n = con.execute("SELECT count(*) FROM probes").fetchone()[0]
        if not n:
            return
        with _stage(f"backlog of {n} calls"):
            windows = con.execute(load("probe_windows")).fetchall()
            self._read_work(windows)
            con.execute(load("backlog"))

    def _read_work(self, windows: list[tuple[int, int]]) -> None:
        """Table `work` with every kernel, memset and memcpy that overlaps one of the windows; with
        many windows, everything that ended after the first starts (the condition is evaluated on
        every row, so a long OR list would cost more than it saves)."""
        if len(windows) <= MAX_WORK_WINDOWS:
            where = " OR ".join(condition("work_window", lo=int(lo), hi=int(hi)) for lo, hi in windows)
        else:
            where = condition("work_window", lo=int(windows[0][0]), hi=int(max(h for _, h in windows)))
        self.trace.con.execute(load("work").replace("{where}", f"({where})"))

    # ------------------------------------------------------------------ results
    def copies(self):
        """Every async memcpy call with its attribution and backlog, one row per API call (polars)."""
        self.ensure_backlog()
        return self.trace.con.execute("SELECT * FROM copies_x ORDER BY api_start").pl()

    def _params(self, opts: Options, **extra) -> dict:
        if opts.direction not in DIRECTIONS:
            raise BadInput(f"bad direction {opts.direction!r}: use one of {', '.join(DIRECTIONS)}")
        return {"min_ns": opts.min_ns, "direction": opts.direction, **extra}

    def by_kind(self, opts: Options):
        return self.by_group("kind", opts)

    def by_group(self, by: str, opts: Options):
        """Figures per group (polars DataFrame; see queries/summary.sql)."""
        import polars as pl

        return pl.DataFrame(self._group_rows(by, opts))

    def _group_rows(self, by: str, opts: Options) -> list[dict]:
        if by not in GROUPS:
            raise BadInput(f"bad grouping {by!r}: use one of {', '.join(GROUPS)}")
        drop = ("by", "group") if by == "kind" else ("by", "src_kind", "dst_kind")
        return [{k: v for k, v in r.items() if k not in drop} for r in self._summaries(opts) if r["by"] == by]

    def _summaries(self, opts: Options) -> list[dict]:
        """Every grouping of summary.sql, computed in one pass and kept for these options."""
        key = (opts.min_ns, opts.direction, opts.top)
        if key not in self._summary_cache:
            params = self._params(opts)
            self.ensure_backlog(opts.min_ns, opts.direction, opts.top)
            with _stage("summaries"):
                self._summary_cache[key] = self.trace.rows("summary", params)
        return self._summary_cache[key]

    def top(self, opts: Options):
        """The longest calls with everything that explains them (polars DataFrame; see queries/top.sql)."""
        import polars as pl

        return pl.DataFrame(self._top_rows(opts))

    def _top_rows(self, opts: Options) -> list[dict]:
        params = self._params(opts, limit=opts.top)
        self.ensure_backlog(opts.min_ns, opts.direction, opts.top)
        with _stage("top calls"):
            return self.trace.rows("top", params)

    def steps(self, pattern: str = DEFAULT_STEP_PATTERN) -> dict:
        try:
            re.compile(pattern)
        except re.error as e:
            raise BadInput(f"bad --step-pattern {pattern!r}: {e}") from None
        row = self.trace.rows("steps", {"pattern": pattern})[0]
        return {"pattern": pattern, "steps": row["steps"], "step_ns": row["step_ns"]}

    def report(self, opts: Options, groups=("site", "class", "nvtx")) -> dict:
        """The JSON-ready report of one trace (the documented contract, see README)."""
        kinds = self._group_rows("kind", opts)
        steps = self.steps(opts.step_pattern)
        totals = {k: int(sum(r[k] or 0 for r in kinds)) for k in
                  ("calls", "long_calls", "blocking_calls", "long_ns", "blocking_ns", "bytes")}
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
            "by_kind": kinds,
            **{f"by_{g}": self._group_rows(g, opts) for g in groups},
            "top": self._top_rows(opts),
            "warnings": self.warnings,
        }

    def close(self) -> None:
        self.trace.close()


@contextmanager
def _stage(what: str):
    if not os.environ.get("NSYSH2D_TIMING"):
        yield
        return
    import resource

    def cpu():
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    t, c = time.perf_counter(), cpu()
    yield
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"nsysh2d: {what}: {time.perf_counter() - t:.3f} s, CPU {cpu() - c:.3f} s "
          f"(peak RSS so far {peak:.0f} MB)", file=sys.stderr)
