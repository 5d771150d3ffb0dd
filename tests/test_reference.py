"""The optimized analysis path (parts read inside SQLite, one join, label ids, bucketed percentiles,
spans read with their condition inside SQLite) against a plain-SQL reference on real H200 exports.

The reference is Python's sqlite3 on the file itself: one join of the runtime and memcpy tables, the
innermost enclosing NVTX range by a correlated subquery, the figures added up in Python and the
percentiles by sorting (the rank ceil(n * q): the smallest value whose cumulative share reaches q).
Nothing of nsysh2d's SQL or DuckDB is used to compute the expected values.
"""
import json
import re
import sqlite3
from collections import defaultdict

import pytest

from conftest import ROOT, run_cli

H200 = ROOT / "tests" / "data" / "h200"
TRACES = ["qwen3vl-before", "train-loop-before", "h2d-sweep", "graph-probe-eager"]
MIN_NS = 100_000

CALLS = """
SELECT r.globalTid AS tid, r.correlationId AS cid, r.start, r."end", r."end" - r.start AS host_ns,
       m.start AS gpu_start, m.bytes, sk.label AS src, dk.label AS dst, m.streamId AS stream,
       (SELECT COALESCE(nv.text, ns.value) FROM NVTX_EVENTS nv LEFT JOIN StringIds ns ON ns.id = nv.textId
         WHERE nv.globalTid = r.globalTid AND nv.start <= r.start AND nv."end" >= r."end"
           AND nv.eventType IN (SELECT id FROM ENUM_NSYS_EVENT_TYPE
                                WHERE label IN ('NvtxPushPopRange', 'NvtxStartEndRange'))
         ORDER BY nv.start DESC, nv."end" ASC LIMIT 1) AS nvtx
FROM CUPTI_ACTIVITY_KIND_RUNTIME r
JOIN StringIds s ON s.id = r.nameId
JOIN ENUM_NSYS_EVENT_CLASS ec ON ec.id = r.eventClass AND ec.label = 'CUDA runtime'
JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = r.correlationId
 AND m.globalPid = (r.globalTid / 16777216) * 16777216
JOIN ENUM_CUDA_MEMCPY_OPER ck ON ck.id = m.copyKind AND ck.label = 'Host-to-Device'
JOIN ENUM_CUDA_MEM_KIND sk ON sk.id = m.srcKind
JOIN ENUM_CUDA_MEM_KIND dk ON dk.id = m.dstKind
WHERE s.value GLOB 'cudaMemcpy*Async*'
"""


def reference_calls(path):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    try:
        # Preconditions of this simple reference: one runtime row per copy call, one activity row each.
        dup = con.execute("SELECT count(*) - count(DISTINCT cid) FROM (" + CALLS + ")").fetchone()[0]
        assert dup == 0
        return [dict(r) for r in con.execute(CALLS)]
    finally:
        con.close()


def rank(values, q_percent):
    """quantile_disc: the value at rank ceil(n * q) of the sorted values (exact integer arithmetic)."""
    v = sorted(values)
    r = max(1, -(-len(v) * q_percent // 100))
    return v[r - 1]


def figures(calls):
    host = [c["host_ns"] for c in calls]
    long_ = [h for h in host if h >= MIN_NS]
    return {"calls": len(calls), "long_calls": len(long_), "long_ns": sum(long_), "total_ns": sum(host),
            "max_ns": max(host), "p50_ns": rank(host, 50), "p99_ns": rank(host, 99),
            "bytes": sum(c["bytes"] for c in calls)}


def grouped(calls, key):
    groups = defaultdict(list)
    for c in calls:
        groups[key(c)].append(c)
    return {k: figures(v) for k, v in groups.items()}


@pytest.fixture(scope="module")
def reports():
    out = {}
    for name in TRACES:
        r = run_cli("analyze", "--no-cache", "--format", "json", "--by", "kind", "--by", "stream", "--by", "nvtx",
                    "--top", "5000", H200 / f"{name}.sqlite")
        assert r.returncode == 0, r.stderr
        out[name] = json.loads(r.stdout)["reports"][0]
    return out


def pick(row):
    return {k: row[k] for k in ("calls", "long_calls", "long_ns", "total_ns", "max_ns", "p50_ns", "p99_ns", "bytes")}


@pytest.mark.parametrize("name", TRACES)
def test_groups_equal_plain_sql(name, reports):
    calls = reference_calls(H200 / f"{name}.sqlite")
    assert calls, "the reference found the trace's H2D copies"
    rep = reports[name]
    kinds = {(r["src_kind"], r["dst_kind"]): pick(r) for r in rep["by_kind"]}
    assert kinds == grouped(calls, lambda c: (c["src"], c["dst"]))
    streams = {r["group"]: pick(r) for r in rep["by_stream"]}
    assert streams == grouped(calls, lambda c: f"stream {c['stream']}")
    nvtx = {r["group"]: pick(r) for r in rep["by_nvtx"]}
    assert nvtx == grouped(calls, lambda c: c["nvtx"] if c["nvtx"] is not None else "(no NVTX range)")


@pytest.mark.parametrize("name", TRACES)
def test_totals_and_listed_calls_equal_plain_sql(name, reports):
    calls = reference_calls(H200 / f"{name}.sqlite")
    rep = reports[name]
    t = rep["totals"]
    ref = figures(calls)
    assert (t["calls"], t["long_calls"], t["long_ns"]) == (ref["calls"], ref["long_calls"], ref["long_ns"])
    # The listed calls are the long ones, longest first, with the reference's host time and GPU start.
    long_ = sorted((c for c in calls if c["host_ns"] >= MIN_NS), key=lambda c: -c["host_ns"])
    listed = rep["top"]
    assert [r["host_ns"] for r in listed] == [c["host_ns"] for c in long_]
    by_start = {(c["start"], c["stream"]): c for c in calls}
    for r in listed:
        c = by_start[(r["api_start_ns"], r["stream"])]
        assert (r["host_ns"], r["wait_ns"], r["bytes"]) == (c["host_ns"], c["gpu_start"] - c["start"], c["bytes"])
        assert r["nvtx_range"] == c["nvtx"]


STEP = re.compile(r"^step\b")   # the default --step-pattern


def reference_steps(path):
    """The step ranges (NVTX push/pop or start/end ranges named by the pattern) as (start, end, process) in
    the ordinal order: by start, then end."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = con.execute("""
            SELECT nv.start, nv."end", nv.globalTid / 16777216, COALESCE(nv.text, ns.value)
            FROM NVTX_EVENTS nv LEFT JOIN StringIds ns ON ns.id = nv.textId
            WHERE nv."end" >= nv.start AND nv.eventType IN (SELECT id FROM ENUM_NSYS_EVENT_TYPE
                                                            WHERE label IN ('NvtxPushPopRange', 'NvtxStartEndRange'))
        """).fetchall()
    finally:
        con.close()
    ranges = sorted(((s, e, p) for s, e, p, name in rows if name and STEP.search(name) and e - s >= 10_000),
                    key=lambda r: (r[2], r[0], -r[1]))
    # A range that starts before an earlier step range of its process ended is no step (issue 54), nor one
    # shorter than 10 us (above).
    counted, ended = [], {}
    for s, e, p in ranges:
        if p not in ended or s >= ended[p]:
            counted.append((s, e, p))
        ended[p] = max(ended.get(p, e), e)
    return sorted(counted)


def step_of(call, steps):
    """The first step (ordinal) of the call's process that contains the call whole; None: none does."""
    return next((i for i, (s, e, p) in enumerate(steps)
                 if p == call["tid"] // 16777216 and s <= call["start"] and call["end"] <= e), None)


def tangled_copy(tmp_path, name):
    """A copy of a real export with step ranges added around its copies that nest, overlap by 1 ns, touch,
    have no length, start 1 ns after the call, both hold it, or belong to another thread of the process or
    to another process."""
    import random
    import shutil

    path = tmp_path / f"{name}-tangled.sqlite"
    shutil.copy(H200 / f"{name}.sqlite", path)
    calls = sorted(reference_calls(path), key=lambda c: c["start"])
    rng = random.Random(7)
    tid = calls[0]["tid"]
    rows = []
    for i, c in enumerate(calls[:: max(1, len(calls) // 40)]):
        shape = i % 8
        if shape == 0:      # a long step holding several calls, with a step nested inside it
            rows += [(c["start"] - 10, c["end"] + 5_000_000, tid), (c["start"], c["end"], tid)]
        elif shape == 1:    # two steps overlapping by 1 ns where the call sits
            rows += [(c["start"] - 100, c["end"], tid), (c["end"] - 1, c["end"] + 100, tid)]
        elif shape == 2:    # touching steps: the call fills one exactly, the next starts where it ends
            rows += [(c["start"], c["end"], tid), (c["end"], c["end"] + rng.randint(1, 700), tid)]
        elif shape == 3:    # a step of no length at the call's start, and one that ends 1 ns too early
            rows += [(c["start"], c["start"], tid), (c["start"] - 3, c["end"] - 1, tid)]
        elif shape == 4:    # another thread of the process (counts), another process (does not)
            rows += [(c["start"] - 50, c["end"] + 50, tid + 1), (c["start"] - 60, c["end"] + 60, tid + (1 << 24))]
        elif shape == 5:    # a step from well before that outlasts the call
            rows += [(c["start"] - rng.randint(10**5, 10**7), c["end"] + 1, tid)]
        elif shape == 6:    # a step that starts 1 ns after the call and outlasts it: the call is not in it
            rows += [(c["start"] + 1, c["end"] + 40, tid)]
        else:               # two steps that both hold the call, the first ending exactly where the call ends
            rows += [(c["start"] - 20, c["end"], tid), (c["start"] - 10, c["end"] + 30, tid)]
    con = sqlite3.connect(path)
    ev = con.execute("SELECT id FROM ENUM_NSYS_EVENT_TYPE WHERE label = 'NvtxPushPopRange'").fetchone()[0]
    con.executemany("INSERT INTO NVTX_EVENTS (start, \"end\", eventType, text, globalTid) VALUES (?, ?, ?, ?, ?)",
                    [(s, e, ev, f"step extra {k}", g) for k, (s, e, g) in enumerate(rows)])
    con.commit()
    con.close()
    return path


@pytest.mark.parametrize("name", ["train-loop-before", "qwen3vl-before", "tangled train-loop-before",
                                  "tangled qwen3vl-before"])
def test_per_step_figures_equal_plain_sql(name, tmp_path):
    """by_step (each call in the first step range of its process that contains it) and the in-steps
    figures of every group, against a search over the step ranges in Python; on real exports and on
    copies of them with added step ranges of every shape (with_step's ASOF join has to be exact there)."""
    path = tangled_copy(tmp_path, name.split()[1]) if name.startswith("tangled") else H200 / f"{name}.sqlite"
    calls, steps = reference_calls(path), reference_steps(path)
    assert steps and any(step_of(c, steps) is not None for c in calls)
    r = run_cli("analyze", "--no-cache", "--format", "json", path)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)["reports"][0]
    if name.startswith("tangled"):   # nested, overlapping and tiny ranges are left out of the steps, and counted
        assert rep["steps"]["not_counted"] > 0 and rep["steps"]["steps"] == len(steps)
    want = defaultdict(lambda: [0, 0, 0])
    in_steps = defaultdict(int)
    for c in calls:
        s = step_of(c, steps)
        w = want[(s, c["src"])]
        w[0] += 1
        if c["host_ns"] >= MIN_NS:
            w[1] += 1
            w[2] += c["host_ns"]
            if s is not None:
                in_steps[(c["src"], c["dst"])] += c["host_ns"]
    got = defaultdict(lambda: [0, 0, 0])   # outside steps: a row before the first step and one after it began
    for r in rep["by_step"]:
        g = got[(r["step"], r["src_kind"])]
        g[0], g[1], g[2] = g[0] + r["calls"], g[1] + r["long_calls"], g[2] + r["long_ns"]
    got = dict(got)
    assert got == dict(want)
    assert {(r["src_kind"], r["dst_kind"]): r["long_ns_in_steps"] for r in rep["by_kind"]} == \
        {k: in_steps.get(k, 0) for k in {(c["src"], c["dst"]) for c in calls}}
    assert rep["steps"]["steps"] == len(steps)


PYBT = [H200 / "qwen3vl-before.sqlite", H200 / "api-probe-pybt.sqlite"]


@pytest.mark.parametrize("path", PYBT, ids=[p.stem for p in PYBT])
def test_python_marks_equal_a_search_over_the_marks(path):
    """model/python_marks.sql (the calls near a mark's time bucket first, then the ASOF join) against a search
    in Python over the file's marks: each call's latest Python-backtrace mark on its thread at most the window
    before it. Windows taken from the real gaps (a call exactly the window after its mark, 1 ns past it) put
    calls on both sides of the bucket edges."""
    from bisect import bisect_right

    from nsysh2d.model import CopyModel

    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        marks = defaultdict(list)
        for tid, start in con.execute("""
                SELECT globalTid, start FROM NVTX_EVENTS WHERE "end" IS NULL AND domainId IN (
                    SELECT domainId FROM NVTX_EVENTS WHERE text = 'Python Backtrace on CUDA'
                    OR textId IN (SELECT id FROM StringIds WHERE value = 'Python Backtrace on CUDA'))"""):
            marks[tid].append(start)
    finally:
        con.close()
    for v in marks.values():
        v.sort()
    model = CopyModel.open(str(path))
    try:
        calls = model.trace.con.execute("SELECT global_pid, correlation_id, global_tid, api_start FROM calls").fetchall()

        def latest(tid, t):
            v = marks.get(tid, [])
            i = bisect_right(v, t)
            return v[i - 1] if i else None

        gaps = sorted(t - m for _, _, tid, t in calls if (m := latest(tid, t)) is not None)
        assert len(gaps) > 10
        windows = {1, gaps[0], gaps[len(gaps) // 2], gaps[len(gaps) // 2] - 1, gaps[-1], 10**9}
        for w in windows:
            want = sorted((p, c, tid, m) for p, c, tid, t in calls
                          if (m := latest(tid, t)) is not None and t - m <= w)
            got = sorted(r[:4] for r in model.trace.run("model/python_marks", {"window_ns": w}).fetchall())
            assert got == want, w
    finally:
        model.close()
