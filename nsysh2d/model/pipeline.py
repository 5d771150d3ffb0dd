"""The copy model of one trace, built by an explicit, named PIPELINE of steps.

Each step reads tables made before it and makes new ones with one SQL file of queries/model/ (the
file's header says what); a step may first do Python work whose tables its SQL reads (attribution.py),
run only when a condition holds, or run once per part of the copy calls as they arrive (ingest.py:
filtered inside SQLite, in parallel, compressed into the store part by part). Work whose cost grows
with the whole trace but that only a few calls need (the GPU backlog behind a call) is the BACKLOG
pipeline, run on demand for those calls only. NSYSH2D_TIMING=1 prints the time, CPU time and peak
RSS of each step on stderr.
"""
from __future__ import annotations

# SQL in Python: the steps' run conditions, composed of the constants below (FOLDS, ALL_CLAIMED).

import os
import sys
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Callable

from ..source import percall
from . import attribution

JOIN_ROWS = 500_000  # calls per correlation-id range joined at once (copies_join.sql): fewer spill, more repeat


@dataclass(frozen=True)
class Step:
    name: str                          # queries/model/<name>.sql
    reads: tuple[str, ...]
    makes: tuple[str, ...]
    prepare: Callable | None = None    # Python work before the SQL (gets the Trace)
    when: str | tuple[str, ...] | None = None   # SQL: run only when this returns true (each of these, in turn)
    each_part: bool = False            # once per part of the copy calls (table api_part)
    per_range: bool = False            # once per range of correlation ids (variable call_range)
    checkpoint: bool = False           # compress what the step added to the store (after each range)


def read_gpu_work(trace) -> None:
    """The kernels, memsets and graph replays inside the spans the backlogs need (work_spans), as the Arrow
    table gpu_work that work.sql reads (the input adapter reads them: Trace.gpu_work)."""
    trace.con.register("gpu_work", trace.gpu_work())


# Some calls need folding (copies_fold.sql): several rows of one call, or runtime rows without activity.
# api_rows: set where the compiled pass left api_raw empty (percall_api_rows.sql).
FOLDS = ("(SELECT count(*) FROM copy_keys_multi) > 0 "
         "OR COALESCE(getvariable('api_rows'), (SELECT count(*) FROM api_raw)) > (SELECT count(*) FROM copies)")

# Every memcpy row has a call, shown by counts alone (the anti joins of unclaimed_activity took 0.17 s at
# 1x for the usual answer): when no key of copies repeats and every activity row has its globalPid, each
# row of copies is one (call, activity row) pair and each activity row is in at most one of them.
ALL_CLAIMED = ("NOT EXISTS (SELECT 1 FROM copy_keys_multi) "
               "AND NOT EXISTS (SELECT 1 FROM memcpy_raw WHERE global_pid IS NULL) "
               "AND (SELECT count(*) FROM copies) = (SELECT count(*) FROM memcpy_raw)")

PIPELINE: tuple[Step, ...] = (
    Step("rules", (), ("is_long()", "waited_for_gpu()", "is_blocking()", "waited_behind_backlog()",
                       "queue_full()", "call_cause()")),
    Step("nvtx", ("n.nvtx_ranges",), ("nvtx_ranges", "nvtx_tree", "nvtx_events", "with_nvtx()", "with_step()")),
    Step("store", ("n.strings",), ("memcpy_raw", "api_raw", "copies", "folded", "fold_stats", "orphan_stats",
                                   "alloc_raw", "alloc_names")),
    Step("store_memcpy", ("n.memcpy",), ("memcpy_raw", "memcpy_multi"), checkpoint=True),
    Step("store_calls", ("api_part", "alloc_names"), ("api_raw", "alloc_raw"), each_part=True),
    Step("copies_join", ("api_raw", "memcpy_raw", "memcpy_multi", "with_nvtx()"), ("copies", "api_calls"), per_range=True,
         checkpoint=True),
    Step("copies", ("copies",), ("copy_keys_multi",)),
    Step("copies_fold", ("copies", "api_raw", "memcpy_raw", "copy_keys_multi"), ("folded", "fold_stats"),
         when=f"SELECT {FOLDS}"),
    # Most exports have nothing to fold: then calls is copies itself, not a union that DuckDB would
    # materialize whole (all columns of every call) for each query that reads copies_x several times.
    Step("calls_plain", ("copies",), ("calls",), when=f"SELECT NOT ({FOLDS})"),
    Step("calls", ("copies", "folded", "fold_stats", "api_raw", "memcpy_raw"),
         ("calls", "copy_stats", "unclaimed_activity"), checkpoint=True),
    # The step scans the runtime table: only when some copy activity no call claims exists.
    Step("orphans", ("unclaimed_activity", "memcpy_raw", "n.runtime", "n.strings", "n.memcpy", "n.kernel",
                     "n.memset", "n.memcpy_graph"), ("orphan_stats",),
         when=(f"SELECT NOT ({ALL_CLAIMED})", "SELECT EXISTS (SELECT 1 FROM unclaimed_activity)")),
    Step("python_sites", ("calls", "n.nvtx", "n.hook_ranges", "hook_calls"), ("py_site_names", "python_sites"),
         prepare=attribution.python_sites),
    Step("labels", ("calls", "python_sites", "n.mem_kind_enum", "n.copy_kind_enum"),
         ("kind_labels", "api_names", "calls_k")),
    Step("attrib", ("calls_k", "kind_labels", "n.callchains"), ("native_sites", "fixes", "attrib"),
         prepare=attribution.native_sites),
    Step("copies_x", ("calls_k", "kind_labels", "api_names", "nvtx_tree", "attrib", "waited_for_gpu()"),
         ("calls_l", "copies_g", "copies_x", "group_key()", "backlog", "work", "work_windows", "work_spans")),
)

# On demand, for the calls a report needs (model/backlog_probes.sql says which).
BACKLOG: tuple[Step, ...] = (
    Step("backlog_probes", ("calls_l", "backlog"), ("probes",)),
    Step("probe_windows", ("probes",), ("work_windows", "work_spans")),
    Step("work", ("work_spans", "gpu_work", "memcpy_raw"), ("work",), prepare=read_gpu_work),
    Step("busy", ("work", "probes"), ("busy_spans",)),
    Step("backlog", ("probes", "work", "busy_spans"), ("backlog",)),
)


# What the compiled per-call pass (source/percall.py) does in their place, when every call is plain.
COMPILED = ("store_calls", "copies_join")


def build(trace) -> None:
    """Run PIPELINE on an opened trace. The copy calls' reads start first, on their own threads, and
    overlap the steps before the first that needs them. With the compiled per-call pass (source/percall.py, asked
    for with NSYSH2D_PERCALL=1) the calls are joined in C at store_calls; when some call needs folding, the SQL
    steps read and join them as without it."""
    mod = percall.wanted(trace)
    with ExitStack() as stack:
        parts, done = stack.enter_context(read_calls(trace)), False
        for step in PIPELINE:
            if mod and step.name == "store_calls":
                with stage("percall"):
                    done = store_compiled(trace, mod, parts)
                if os.environ.get("NSYSH2D_TIMING"):
                    print(f"nsysh2d: percall: {'joined in C' if done else 'some calls fold: the SQL steps join'}",
                          file=sys.stderr)
                if not done:   # the parts read so far are gone: the SQL steps read the calls again
                    parts.close()
                    parts = stack.enter_context(read_calls(trace))
            if not (done and step.name in COMPILED):
                run_step(trace, step, parts)


def store_compiled(trace, mod, parts) -> bool:
    """copies (with each call's NVTX range) and alloc_raw from the calls' parts joined in C with memcpy_raw, when
    every call is plain (percall.Plain): True. False: copies and alloc_raw are left empty for the SQL steps."""
    con = trace.con
    with stage("percall: the activity indexed"):
        act = percall.Activity(mod, trace.run("model/percall_memcpy").to_arrow_table())
    if act.dups:
        return False
    plain = percall.Plain(act.rows, {int(r[0]) for r in con.execute("SELECT id FROM alloc_names").fetchall()})
    events = percall.events(trace.run("model/percall_events").to_arrow_table())
    calls = 0
    for part in parts:
        part = percall.arrow(part)
        match = act.match(part)
        if not plain.add(part, match):
            con.execute("DELETE FROM copies")
            con.execute("DELETE FROM alloc_raw")
            return False
        with stage("percall: a part's NVTX ranges and activity columns"):
            copies = percall.copies_part(mod, part, match, act.table, events)
        with stage("percall: a part into copies"):
            con.register("percall_part", copies)
            trace.run("model/percall_copies")
            con.unregister("percall_part")
            con.execute("CHECKPOINT store")   # compressed part by part, as copies_join's ranges
        calls += part.num_rows
        del part, match, copies
    calls -= con.execute("SELECT count(*) FROM alloc_raw").fetchone()[0]
    trace.run("model/percall_api_rows", {"n": calls})
    return True


def read_calls(trace):
    """The copy calls' runtime rows, in parts, reading from now on (the input adapter: Trace.copy_calls)."""
    return trace.copy_calls()


def run_step(trace, step: Step, parts=None, params: dict | None = None) -> None:
    con = trace.con
    whens = (step.when,) if isinstance(step.when, str) else step.when or ()
    if not all(con.execute(w).fetchone()[0] for w in whens):   # in turn: the first false one stops
        return
    with stage(step.name):
        if step.prepare:
            step.prepare(trace)
        if step.each_part:
            for part in parts:
                con.register("api_part", part)
                trace.run(f"model/{step.name}", params)
                con.unregister("api_part")
                del part
                con.execute("CHECKPOINT store")
        elif step.per_range:
            for lo, hi in call_ranges(trace):
                trace.run("model/call_range", {"lo": lo, "hi": hi})
                trace.run(f"model/{step.name}", params)
                con.execute("CHECKPOINT store")
        else:
            trace.run(f"model/{step.name}", params)
            if step.checkpoint:
                con.execute("CHECKPOINT store")


def call_ranges(trace) -> list[tuple[int, int]]:
    """Correlation-id ranges of about JOIN_ROWS calls each, covering every call (ids spread unevenly
    only make the ranges uneven)."""
    lo, hi, n = trace.run("model/call_ranges").fetchone()
    if not n:
        return []
    k = max(1, -(-n // JOIN_ROWS))
    step = (hi - lo) // k + 1
    return [(a, min(hi, a + step - 1)) for a in range(lo, hi + 1, step)]


@contextmanager
def stage(what: str):
    if not os.environ.get("NSYSH2D_TIMING"):
        yield
        return
    import resource   # lazy: only NSYSH2D_TIMING's stage times read it

    def cpu():
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    t, c = time.perf_counter(), cpu()
    yield
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"nsysh2d: {what}: {time.perf_counter() - t:.3f} s, CPU {cpu() - c:.3f} s "
          f"(peak RSS so far {peak:.0f} MB)", file=sys.stderr)
