"""Issue 40's probes on the H100 (tests/data/h100/): the launch queue's depth for kernels and for copies, and the
pageable threshold bisected to 64 KiB, recomputed here from the raw per-call host timers the docs quote."""
import gzip
import json
import statistics
from collections import defaultdict

import pytest

from conftest import DATA

H100 = DATA / "h100"


def probes(name):
    doc = json.loads((H100 / name).read_text())
    out = {(p["queued"], p["call"]): statistics.median(p["host_us"]) for p in doc["probes"]}
    return doc, out


def test_kernel_queue_holds_1021_behind_the_running_kernel():
    doc, p = probes("queue-depth-kernels.json")
    assert [f["first_waiting_launch"] for f in doc["fills"]] == [1021] * 3
    head_us = doc["args"]["head_ms"] * 1000
    assert all(f["wait_us"] > 0.9 * head_us for f in doc["fills"])       # it waited for the head kernel
    assert p[(1020, "launch")] < 100 and p[(1021, "launch")] > 0.9 * head_us
    assert p[(1021, "pinned_copy")] < 1000                                # a copy does not wait for that queue
    assert p[(1022, "launch")] < 2 * doc["args"]["kernel_us"]             # then one short kernel at a time


def test_copy_queue_is_separate_and_as_deep():
    doc, p = probes("queue-depth-copies.json")
    assert doc["args"]["fill_with"] == "pinned_copies"
    assert [f["first_waiting_launch"] for f in doc["fills"]] == [1021] * 3
    head_us = doc["args"]["head_ms"] * 1000
    assert p[(1021, "pinned_copy")] > 0.9 * head_us and p[(1020, "pinned_copy")] < 1000
    assert p[(1021, "launch")] < 1000                                     # a launch does not wait for it


BISECTIONS = sorted(H100.glob("**/bisect*.json.gz"))


@pytest.mark.parametrize("path", BISECTIONS, ids=lambda p: str(p.relative_to(H100)))
def test_bisected_threshold_is_2_mib_for_one_copy_at_every_backlog(path):
    """Each bisection run (two H100 leases so far) gives the same thresholds."""
    with gzip.open(path, "rt") as f:
        records = json.load(f)["records"]
    slow = defaultdict(float)
    for r in records:
        k = (r["variant"], r["backlog_us"], r["inflight"], r["bytes"], r["rep"])
        slow[k] = max(slow[k], r["host_us"])
    waited = defaultdict(list)
    for (v, b, n_in, size, _rep), us in slow.items():
        waited[(v, b, n_in, size)].append(us >= 0.5 * b)

    def waits(v, b, n_in, size):
        w = waited[(v, b, n_in, size)]
        return sum(w) * 2 > len(w)

    kib = 1024
    for v in ("pageable", "numpy_from", "pinned_strided"):
        for b in (2000, 10000, 50000):
            assert not waits(v, b, 1, 2048 * kib) and waits(v, b, 1, 2112 * kib)
            assert not any(waits(v, b, 1, s * kib) for s in range(64, 2049, 64))
        assert not waits(v, 10000, 2, 1024 * kib) and waits(v, 10000, 2, 1088 * kib)
        assert not waits(v, 10000, 4, 64 * kib) and waits(v, 10000, 4, 128 * kib)


def queued_ahead_sql(path, corr, api_start, stream, pid):
    """The launches (distinct correlationIds: a graph replay is one) the process made on the stream before the
    call that had not started when the call began: plain SQL over the activity tables."""
    import sqlite3

    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    tables = {t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    parts = [f"SELECT correlationId FROM {t} WHERE streamId = ? AND globalPid = ? AND correlationId < ? AND start > ?"
             for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_MEMCPY",
                       "CUPTI_ACTIVITY_KIND_GRAPH_TRACE") if t in tables]
    args = [stream, pid, corr, api_start] * len(parts)
    return con.execute(f"SELECT count(DISTINCT correlationId) FROM ({' UNION ALL '.join(parts)})", args).fetchone()[0]


def queued_ahead_json(path, call):
    """The same count from a Kineto trace's JSON: GPU events on the call's device and stream with a lower
    correlation id that started after the call did."""
    with gzip.open(path, "rt") as f:
        evs = json.load(f)["traceEvents"]
    ev = next(e for e in evs if e.get("cat") == "cuda_runtime" and round(e["ts"] * 1000) == call["api_start_ns"])
    corr = ev["args"]["correlation"]
    return len({e["args"]["correlation"] for e in evs
                if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy") and e["args"].get("stream") == call["stream"]
                and e["args"]["correlation"] < corr and e["ts"] * 1000 > call["api_start_ns"]})


def test_calls_into_a_full_queue_are_named_so_with_the_count_plain_sql_gives():
    """Issue 40: the long pinned copies of the Qwen3-VL step that queues seconds of work waited for a slot, not for
    their transfer: every one had >= 1000 items launched ahead and not started (the probe: a stream holds 1021).
    The report's queued_ahead equals plain SQL; its cause is launch_queue; blocking calls are 'backlog', or
    'own_transfer' where nothing was queued ahead (the pageable vision position ids of a step with an empty queue)."""
    from conftest import H200, run_cli

    for name in ("qwen3vl-after", "qwen3vl-before"):
        path = H200 / f"{name}.sqlite"
        doc = json.loads(run_cli("analyze", path, "--format", "json", "--top", "20").stdout)["reports"][0]
        import sqlite3

        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        causes = set()
        for t in doc["top"]:
            corr, pid = con.execute(
                "SELECT r.correlationId, m.globalPid FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
                "JOIN CUPTI_ACTIVITY_KIND_MEMCPY m USING (correlationId) WHERE r.start = ? AND r.eventClass = 0",
                (t["api_start_ns"],)).fetchone()
            assert t["queued_ahead"] == queued_ahead_sql(path, corr, t["api_start_ns"], t["stream"], pid)
            if t["waited_for_gpu"]:   # mostly the backlog ahead, or mostly its own transfer (rules.sql)
                expected = "backlog" if t["backlog_ns"] >= 0.5 * t["host_ns"] else "own_transfer"
            else:
                expected = "launch_queue" if t["queued_ahead"] >= 1000 else "unknown"
            assert t["cause"] == expected
            if expected == "own_transfer":   # nothing was queued ahead of it, by plain SQL (above)
                assert t["queued_ahead"] == 0 and t["backlog_ns"] == 0
            causes.add(t["cause"])
        if name == "qwen3vl-after":
            assert causes == {"launch_queue"} and len(doc["top"]) == 5
            text = " ".join(run_cli("analyze", path).stdout.split())   # the note wraps at the terminal's width
            assert "queue full: 5 of these calls (waited: queue)" in text and "pinning does not help" in text
        else:
            assert causes == {"backlog", "launch_queue", "own_transfer"}
    kineto = DATA / "kineto" / "qwen3vl-after.pt.trace.json.gz"
    doc = json.loads(run_cli("analyze", kineto, "--format", "json").stdout)["reports"][0]
    assert {t["cause"] for t in doc["top"]} == {"launch_queue"}
    for t in doc["top"]:
        assert t["queued_ahead"] == queued_ahead_json(kineto, t) and t["queued_ahead"] >= 1000
