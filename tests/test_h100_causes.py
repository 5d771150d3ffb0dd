"""Issue 40: each cause of a long call, reproduced alone on a GPU (workloads/cause_probe.py, H100, 2026-12-07:
tests/data/h100/causes/), and what the report says of it. The probe puts each case in an NVTX range `cause <name>`;
that range is the truth a long call's cause must equal, found here with plain SQL over the export. The probe's own
host timers (its --json, written by the same traced run) must agree with the trace's durations: an independent
measurement of the same calls."""
import json
import sqlite3
from collections import Counter

import pytest

from conftest import DATA, run_cli

HERE = DATA / "h100" / "causes"
TRACE = HERE / "cause-probe.sqlite"
CASES = {"backlog", "launch_queue", "own_transfer", "host_allocation"}


def long_calls_sql(min_ns=100_000) -> list[tuple]:
    """(case or None, api, start, duration) of every long copy call and long cudaHostAlloc, with the `cause ...` NVTX
    range (same thread) around it: plain SQL."""
    con = sqlite3.connect(f"file:{TRACE}?mode=ro", uri=True)
    try:
        return con.execute("""
            WITH rng AS (
                SELECT n.globalTid AS tid, n.start, n."end", COALESCE(n.text, s.value) AS name
                FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId
                WHERE n."end" IS NOT NULL AND COALESCE(n.text, s.value) LIKE 'cause %'),
            calls AS (
                SELECT r.globalTid AS tid, r.start, r."end", s.value AS api
                FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
                WHERE (s.value GLOB 'cu*Memcpy*' OR s.value GLOB 'cudaHostAlloc*') AND r."end" - r.start >= ?)
            SELECT (SELECT substr(g.name, 7) FROM rng g WHERE g.tid = c.tid AND c.start >= g.start AND c."end" <= g."end"),
                   c.api, c.start, c."end" - c.start,
                   -- a copy of the process in flight during it (issue 56: host_allocation needs that evidence)
                   EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
                           JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = r.correlationId
                           WHERE s.value GLOB 'cu*Memcpy*' AND r.globalTid / 16777216 = c.tid / 16777216
                             AND r.start < c."end" AND m."end" > c.start)
            FROM calls c ORDER BY c.start""", (min_ns,)).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def report():
    r = run_cli("analyze", TRACE, "--format", "json", "--top", "1000", "--direction", "all", "--calls", "all",
                "--no-cache")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["reports"][0]


def test_every_long_call_gets_the_cause_its_probe_built(report):
    rows = long_calls_sql()
    # The probe's set-up pins two buffers before any range: a host allocation counts only inside a range with
    # copies (by_cause.sql's rule). Every long copy call is inside a case's range, and every case has some.
    assert all(case is not None for case, api, *_ in rows if "Memcpy" in api)
    # An allocation with no copy in flight (the case's first, after the case before it drained) is new_host_allocation.
    truth = [("new_host_allocation" if case == "host_allocation" and not flight else case, api, start, d)
             for case, api, start, d, flight in rows if case is not None]
    assert {case for case, *_ in truth} >= CASES
    copies = sorted((case, start) for case, api, start, _d in truth if "Memcpy" in api)
    assert sorted((t["cause"], t["api_start_ns"]) for t in report["top"]) == copies
    assert {b["cause"]: b["calls"] for b in report["by_cause"]} == Counter(case for case, *_ in truth)
    assert {b["cause"]: b["host_ns"] for b in report["by_cause"]} == \
        {case: sum(d for c, _a, _s, d in truth if c == case) for case in {c for c, *_ in truth}}
    # The launch-queue calls waited for a slot, not for their backlog: a full stream (1021 items ahead).
    queue = [t for t in report["top"] if t["cause"] == "launch_queue"]
    assert queue and all(t["queued_ahead"] >= 1021 and t["source_class"] == "pinned" for t in queue)


def test_the_traces_durations_agree_with_the_probes_host_timers():
    """The probe timed each call on the host (time.perf_counter around it) in the same run nsys traced: the k longest
    host times of a case's call agree with its k long calls in the trace, within 5% (what tracing adds). A
    cudaHostAlloc is part of its .pin_memory(): at most as long, and most of it."""
    timers = json.loads((HERE / "causes-trace.json").read_text())
    assert timers["device"].startswith("NVIDIA H100")
    host: dict[str, list[float]] = {}
    for c in timers["calls"]:
        host.setdefault((c["case"], c["call"]), []).append(c["host_us"] * 1000)
    trace: dict[str, list[int]] = {}
    for case, _api, _start, d, _flight in long_calls_sql():
        if case is not None:
            trace.setdefault(case, []).append(d)
    calls = {"backlog": "pageable_copy_8MiB", "own_transfer": "pageable_copy_256MiB",
             "launch_queue": "pinned_copy_2MiB", "host_allocation": "pin_memory_grow"}
    for case, call in calls.items():
        traced = sorted(trace[case])
        timed = sorted(host[(case, call)])[-len(traced):]
        if case == "host_allocation":
            assert all(0.8 * t <= d <= t for d, t in zip(traced, timed)), (case, traced, timed)
        else:
            assert all(abs(d - t) <= 0.05 * t for d, t in zip(traced, timed)), (case, traced, timed)
