"""Issue 41, one GPU: two processes share one H100 at once (`scripts/h200-capture.sh two-proc`, 2026-12-07:
workloads/train_loop.py `before` and `after` started together, one nsys report of both; tests/data/h100/stop49/). The
report judges each process on its own. Which process is which comes from the trace by plain SQL (before's DataLoader
hands over pageable batches, after's pins them); what each process's copies cost comes from its own host timer
(its --json, written in the traced run): the independent measurement the per-process figures must agree with."""
import json
import sqlite3

from conftest import DATA, run_cli

HERE = DATA / "h100" / "stop49"
TRACE = HERE / "two-proc.sqlite"


def per_process_sql() -> dict[int, dict]:
    """Per OS pid: the share of its host-to-device copies from pinned memory, and its long (>= 100 us) async
    host-to-device copy calls (one runtime row each, joined to its activity by correlationId): plain SQL."""
    con = sqlite3.connect(f"file:{TRACE}?mode=ro", uri=True)
    try:
        share = dict(con.execute("""
            SELECT (globalPid >> 24) & 16777215, avg(srcKind = 1) FROM CUPTI_ACTIVITY_KIND_MEMCPY
            WHERE copyKind = 1 GROUP BY 1""").fetchall())
        long_calls = dict(con.execute("""
            SELECT (r.globalTid >> 24) & 16777215, count(*)
            FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
            JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = r.correlationId
             AND m.globalPid = (r.globalTid >> 24) << 24
            WHERE s.value GLOB 'cudaMemcpyAsync*' AND m.copyKind = 1 AND r."end" - r.start >= 100000
            GROUP BY 1""").fetchall())
    finally:
        con.close()
    return {pid: {"pinned_share": s, "long_calls": long_calls.get(pid, 0)} for pid, s in share.items()}


def test_each_process_is_judged_on_its_own_and_agrees_with_its_host_timer():
    r = run_cli("analyze", TRACE, "--format", "json", "--no-cache")
    assert r.returncode == 0, r.stderr
    procs = {p["pid"]: p for p in json.loads(r.stdout)["reports"][0]["by_process"]}
    truth = per_process_sql()
    assert set(procs) == set(truth) and len(procs) == 2
    assert all(p["devices"] == [0] for p in procs.values())          # one GPU, shared
    before = min(truth, key=lambda pid: truth[pid]["pinned_share"])
    after = max(truth, key=lambda pid: truth[pid]["pinned_share"])
    assert truth[before]["pinned_share"] == 0 and truth[after]["pinned_share"] > 0.5
    assert {pid: p["long_calls"] for pid, p in procs.items()} == {pid: t["long_calls"] for pid, t in truth.items()}

    timers = {v: json.loads((HERE / f"two-nsys-{v}.json").read_text()) for v in ("before", "after")}
    assert procs[before]["steps"] == procs[after]["steps"] == timers["before"]["steps"] == timers["after"]["steps"]
    # before: its copy blocks every step; the host timer's mean copy per step is the measure (8.15 ms)
    host_before_ns = sum(timers["before"]["copy_us"]) / len(timers["before"]["copy_us"]) * 1000
    assert abs(procs[before]["blocking_ns_per_step"] - host_before_ns) <= 0.1 * host_before_ns
    # after: pinned batches, nothing blocks inside the steps; its host timer says the copy returns at once
    assert procs[after]["blocking_ns_per_step"] == 0 and timers["after"]["copy_us_median"] < 500
