"""Issue 41, the part one GPU and the CPUs allow: several ranks in one report, each on its own device and process.
The fixtures are synthetic (tests/ranks.py: a real single-GPU export copied as rank 1, its pid + 1, its GPU work
on device 1, every timestamp 1.3 ms later). Each long copy's GPU idle must count its own device's work only, and
its backlog its own stream's: checked per process and device against plain SQL, and against the real export."""
import json
import sqlite3
from collections import Counter

import pytest

from conftest import BEFORE, H200, run_cli
from ranks import PID_STEP, make_ranks


def plain_sql(path, min_ns=100_000):
    """Every long H2D async copy call by plain SQL, joined to its activity by process and correlationId, with
    (pid, api start, host ns, GPU idle on its device: the call minus the union of kernels, memsets and graph
    replays there)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    busy = {}
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for t in tables & {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"}:
        for dev, s, e in con.execute(f"SELECT deviceId, start, end FROM {t}"):
            busy.setdefault(dev, []).append((s, e))
    calls = con.execute(f"""
        SELECT r.globalTid / {PID_STEP} % 16777216, r.start, r.end, m.deviceId
        FROM CUPTI_ACTIVITY_KIND_RUNTIME r
        JOIN StringIds s ON s.id = r.nameId AND s.value GLOB 'cu*Memcpy*Async*'
        JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = r.correlationId AND m.copyKind = 1
         AND m.globalPid = r.globalTid / {PID_STEP} * {PID_STEP}
        WHERE r.eventClass IN (SELECT id FROM ENUM_NSYS_EVENT_CLASS WHERE label IN ('CUDA runtime', 'CUDA driver'))
          AND r.end - r.start >= ?""", (min_ns,)).fetchall()
    con.close()
    out = {}
    for pid, start, end, dev in calls:
        covered, last = 0, start
        for s, e in sorted(busy.get(dev, [])):
            s, e = max(s, last), min(e, end)
            if e > s:
                covered += e - s
                last = e
        out[(pid, start)] = {"host_ns": end - start, "gpu_idle_ns": end - start - covered, "device": dev}
    return out


def report(path):
    r = run_cli("analyze", path, "--format", "json", "--top", "1000")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["reports"][0]


@pytest.mark.parametrize("source", [BEFORE, H200 / "qwen3vl-before.sqlite"], ids=["train-loop", "qwen3vl"])
def test_two_ranks_each_judged_on_its_own_device(tmp_path, source):
    path = make_ranks(source, tmp_path / "ranks.sqlite", ranks=2)
    one, two = report(source), report(path)
    ref = plain_sql(path)
    assert len(two["top"]) == len(ref) == 2 * len(one["top"]) == two["totals"]["long_calls"]
    pids = Counter(t["pid"] for t in two["top"])
    assert len(pids) == 2 and len(set(pids.values())) == 1
    for t in two["top"]:
        r = ref[(t["pid"], t["api_start_ns"])]
        assert (t["host_ns"], t["gpu_idle_ns"], t["device"]) == (r["host_ns"], r["gpu_idle_ns"], r["device"])
    # rank 1 is rank 0 moved by 1.3 ms onto device 1: the same idle, backlog, wait and cause, call for call (a
    # figure that mixed devices would see rank 0's kernels overlap rank 1's calls and differ)
    low = min(pids)
    key = lambda t: (t["api_start_ns"] - (t["pid"] - low) * 1_300_000, t["host_ns"])   # noqa: E731
    fields = ("host_ns", "gpu_idle_ns", "backlog_ns", "wait_ns", "cause", "source_class", "queued_ahead")
    by_rank = {p: sorted((key(t), [t[f] for f in fields]) for t in two["top"] if t["pid"] == p) for p in pids}
    assert by_rank[low] == by_rank[low + 1]
    assert sorted(v for _k, v in by_rank[low]) == sorted([t[f] for f in fields] for t in one["top"])
    assert {t["device"] for t in two["top"] if t["pid"] == low + 1} == {1}
    assert two["totals"]["gpu_idle_ns"] == 2 * one["totals"]["gpu_idle_ns"]
    # the step ranges of both processes count: twice the steps, so per-step figures stay the same per rank
    assert two["steps"]["steps"] == 2 * one["steps"]["steps"]
    assert two["totals"]["blocking_ns_per_step"] == pytest.approx(one["totals"]["blocking_ns_per_step"])


def test_by_process_equals_plain_sql_and_the_gate_judges_each_rank(tmp_path):
    """Three ranks of the real qwen3vl export; ranks 1 and 2 edited so their memcpy calls return at once (end =
    start + 50 us): over all 24 steps the blocked time per step is within 1 ms, but rank 0 alone is not, and the
    gate says so for that rank."""
    path = make_ranks(H200 / "qwen3vl-before.sqlite", tmp_path / "ranks.sqlite", ranks=3)
    con = sqlite3.connect(path)
    con.execute(f"""UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET end = start + 50000
                    WHERE globalTid / {PID_STEP} % 16777216 > (SELECT min(globalTid / {PID_STEP} % 16777216)
                                                               FROM CUPTI_ACTIVITY_KIND_RUNTIME)
                      AND nameId IN (SELECT id FROM StringIds WHERE value GLOB 'cu*Memcpy*')""")
    con.commit()
    con.close()
    rep = report(path)
    ref = plain_sql(path)
    procs = {p["pid"]: p for p in rep["by_process"]}
    assert len(procs) == 3
    for pid, p in procs.items():
        mine = [r for (q, _s), r in ref.items() if q == pid]
        assert p["long_calls"] == len(mine) and p["long_ns"] == sum(r["host_ns"] for r in mine)
        assert p["gpu_idle_ns"] == sum(r["gpu_idle_ns"] for r in mine) and p["steps"] == 8
        assert p["devices"] == [pid - min(procs)]
    low = procs[min(procs)]
    assert low["blocking_ns_per_step"] == low["blocking_ns_in_steps"] / 8 > 1e6
    assert sum(p["long_calls"] for p in procs.values()) == rep["totals"]["long_calls"] == low["long_calls"]
    r = run_cli("gate", path, "--max-long-calls", "99", "--max-blocked-per-step", "1ms")
    assert r.returncode == 1
    assert "[pass] max-blocked-per-step: 0.584 ms host time in long-blocking copies per step over 24 steps" in r.stdout
    assert (f"[FAIL] max-blocked-per-step-per-process: 1 of 3 processes over the limit; worst: pid {min(procs)} "
            "1.753 ms per step over 8 steps; allowed 1.000 ms") in r.stdout
    text = run_cli("analyze", path).stdout
    assert "by process (rank)" in text
    assert "by process (rank)" not in run_cli("analyze", H200 / "qwen3vl-before.sqlite").stdout


def test_a_copy_behind_a_collective_says_so(tmp_path):
    """Rank 1's kernels that ran on its longest copy's stream while that copy waited are renamed as an NCCL
    all-reduce (an edit of the real api-probe export, whose copies wait behind queued kernels): that copy's
    collective_ns_ahead equals plain SQL over those kernels, every other call's stays 0, and the report says what it
    means."""
    path = make_ranks(H200 / "api-probe.sqlite", tmp_path / "ranks.sqlite", ranks=2)
    rep = report(path)
    pids = sorted({t["pid"] for t in rep["top"]})
    call = max((t for t in rep["top"] if t["pid"] == pids[1]), key=lambda t: t["host_ns"])
    lo, hi = call["api_start_ns"], call["api_start_ns"] + call["wait_ns"]
    con = sqlite3.connect(path)
    sid = con.execute("SELECT max(id) + 1 FROM StringIds").fetchone()[0]
    con.execute("INSERT INTO StringIds (id, value) VALUES (?, 'ncclDevKernel_AllReduce_Sum_bf16_RING_LL')", (sid,))
    where = "deviceId = ? AND streamId = ? AND end > ? AND start < ?"
    args = (call["device"], call["stream"], lo, hi)
    expected = con.execute(f"SELECT sum(min(end, ?) - max(start, ?)) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE {where}",
                           (hi, lo, *args)).fetchone()[0]
    con.execute(f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET shortName = ? WHERE {where}", (sid, *args))
    con.commit()
    con.close()
    assert call["device"] == 1 and expected > 0.5 * call["wait_ns"]
    rep = report(path)
    got = {(t["pid"], t["api_start_ns"]): t["collective_ns_ahead"] for t in rep["top"]}
    assert got.pop((pids[1], lo)) == expected
    assert set(got.values()) == {0}
    text = " ".join(run_cli("analyze", path).stdout.split())
    assert "behind a collective: 1 of the longest calls waited while NCCL kernels ran on their stream" in text


def test_compare_of_rank_sets(tmp_path):
    """Two-rank sets of the real before and after exports: compare puts rank i beside rank i, each figure the
    by_process row of its side (and those equal plain SQL above)."""
    b = make_ranks(H200 / "qwen3vl-before.sqlite", tmp_path / "b.sqlite", ranks=2)
    a = make_ranks(H200 / "qwen3vl-after.sqlite", tmp_path / "a.sqlite", ranks=2)
    doc = json.loads(run_cli("compare", b, a, "--format", "json").stdout)["compare"]
    pb, pa = report(b)["by_process"], report(a)["by_process"]
    assert [r["rank"] for r in doc["by_rank"]] == [0, 1]
    for r, x, y in zip(doc["by_rank"], pb, pa):
        assert (r["pid_before"], r["pid_after"]) == (x["pid"], y["pid"])
        for k in ("blocking_calls", "blocking_ns", "blocking_ns_per_step", "gpu_idle_ns", "steps"):
            assert (r[f"{k}_before"], r[f"{k}_after"]) == (x[k], y[k])
            assert r[f"{k}_delta"] == y[k] - x[k]
    assert doc["by_rank"][1]["blocking_calls_delta"] == -4
    assert "by rank (the i-th process by pid on each side)" in run_cli("compare", b, a).stdout
    single = json.loads(run_cli("compare", H200 / "qwen3vl-before.sqlite", H200 / "qwen3vl-after.sqlite",
                                "--format", "json").stdout)["compare"]
    assert "by_rank" not in single
