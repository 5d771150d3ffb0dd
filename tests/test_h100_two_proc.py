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


KINETO = {v: HERE / f"two-proc-{v}.pt.trace.json.gz" for v in ("before", "after")}


def kineto_sql_like(path, min_ns=100_000):
    """Plain JSON arithmetic over one torch.profiler file: its process ids, its H2D async copy calls (runtime event
    joined to its GPU copy by correlation id) as (start ns, host ns, bytes), its step ranges, and its GPU window."""
    from test_kineto import events, h2d_calls

    evs = events(path)
    calls = [(s, d, b) for s, d, b, _tid in h2d_calls(path)]
    steps = [(round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)) for e in evs
             if e.get("ph") == "X" and e.get("cat") == "user_annotation" and e["name"].split()[0] == "step"]
    gpu = [e for e in evs if e.get("cat") in ("kernel", "gpu_memcpy")]
    return {"pids": {e["pid"] for e in evs if e.get("cat") == "cuda_runtime"},
            "calls": calls, "long": [c for c in calls if c[1] >= min_ns], "steps": steps,
            "gpu_window": (min(e["ts"] for e in gpu), max(e["ts"] + e["dur"] for e in gpu))}


def test_the_torch_profiler_file_of_each_process_is_judged_on_its_own(cli):
    """The same two processes, run again at once under torch.profiler (one file each, as vLLM's profiler writes
    per rank): they shared the GPU (their GPU windows overlap), each file's figures equal plain JSON arithmetic,
    before blocks about as long per step as its own host timer read around its copies, after blocks nothing inside
    its steps, and the gate fails the one rank that blocks."""
    truth = {v: kineto_sql_like(p) for v, p in KINETO.items()}
    assert truth["before"]["pids"].isdisjoint(truth["after"]["pids"])
    (b0, b1), (a0, a1) = truth["before"]["gpu_window"], truth["after"]["gpu_window"]
    assert max(b0, a0) < min(b1, a1)                                       # at once, on one GPU
    doc = json.loads(cli("analyze", KINETO["before"], KINETO["after"], "--format", "json", "--no-cache").output)
    reports = {v: r for v, r in zip(("before", "after"), doc["reports"])}
    for v, r in reports.items():
        t, want = r["totals"], truth[v]
        assert r["format"] == "kineto" and r["path"].endswith(KINETO[v].name)
        assert t["calls"] == len(want["calls"]) and t["bytes"] == sum(b for _s, _d, b in want["calls"])
        assert t["long_calls"] == len(want["long"]) and t["long_ns"] == sum(d for _s, d, _b in want["long"])
        in_steps = [d for s, d, _b in want["long"] if any(a <= s < e for a, e in want["steps"])]
        assert r["steps"]["steps"] == len(want["steps"]) == 20
        assert t["long_ns_per_step"] == sum(in_steps) / len(want["steps"])
    timers = {v: json.loads((HERE / f"two-kineto-{v}.json").read_text()) for v in ("before", "after")}
    host_before_ns = sum(timers["before"]["copy_us"]) / len(timers["before"]["copy_us"]) * 1000
    assert abs(reports["before"]["totals"]["blocking_ns_per_step"] - host_before_ns) <= 0.1 * host_before_ns
    assert reports["after"]["totals"]["blocking_ns_per_step"] == 0 and timers["after"]["copy_us_median"] < 500
    r = cli("gate", KINETO["before"], KINETO["after"], "--format", "json")
    gate = json.loads(r.output)
    assert r.exit_code == 1 and gate["passed"] is False
    assert {v["path"].rsplit("/", 1)[1]: v["passed"] for v in gate["verdicts"]} == {
        KINETO["before"].name: False, KINETO["after"].name: True}
    # the failing rank's count is its own long calls inside steps; its offenders, those among its 20 longest calls
    rule = gate["verdicts"][0]["rules"][0]
    steps = truth["before"]["steps"]
    in_steps = [c for c in truth["before"]["long"] if any(a <= c[0] < e for a, e in steps)]
    assert rule["message"].startswith(f"{len(in_steps)} long-blocking h2d copies")
    longest = sorted(truth["before"]["long"], key=lambda c: -c[1])[:20]
    assert sorted((o["api_start_ns"], o["host_ns"]) for o in rule["offenders"]) == sorted(
        (s, d) for s, d, _b in longest if any(a <= s < e for a, e in steps))
    # pageable batches: each waited for the work queued ahead or for its own staged transfer (rules.sql's order)
    for o in rule["offenders"]:
        assert o["src_kind"] == "Pageable" and o["pid"] in truth["before"]["pids"]
        assert o["cause"] == ("backlog" if o["backlog_ns"] >= 0.5 * o["host_ns"] else "own_transfer")


def test_compare_of_two_rank_folders_pairs_rank_i_with_rank_i(cli, tmp_path):
    """Two folders of per-rank torch.profiler files (as vLLM writes them) are two rank sets: rank i against rank i,
    in name order with numbers read as numbers (rank-2 before rank-10), each rank's figures equal plain JSON
    arithmetic over its own file. A folder beside a file, or folders of unequal sizes, are refused in one line."""
    import shutil

    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir(), after.mkdir()
    # before: rank 2 blocks (pageable), rank 10 does not; after: both pinned
    shutil.copy(KINETO["before"], before / "run-rank-2.pt.trace.json.gz")
    shutil.copy(KINETO["after"], before / "run-rank-10.pt.trace.json.gz")
    for r in (2, 10):
        shutil.copy(KINETO["after"], after / f"run-rank-{r}.pt.trace.json.gz")
    doc = json.loads(cli("compare", before, after, "--format", "json", "--no-cache").output)["compare"]
    assert [(p["before"]["path"], p["after"]["path"]) for p in doc["pairs"]] == [
        (str(before / f"run-rank-{r}.pt.trace.json.gz"), str(after / f"run-rank-{r}.pt.trace.json.gz")) for r in (2, 10)]
    truth = {v: kineto_sql_like(p) for v, p in KINETO.items()}
    sides = [(truth["before"], truth["after"]), (truth["after"], truth["after"])]
    for row, (tb, ta) in zip(doc["by_rank"], sides):
        assert row["long_calls_before"] == len(tb["long"]) and row["long_calls_after"] == len(ta["long"])
        assert row["long_ns_delta"] == sum(d for _s, d, _b in ta["long"]) - sum(d for _s, d, _b in tb["long"])
        assert row["steps_before"] == len(tb["steps"]) and row["steps_after"] == len(ta["steps"])
    assert doc["by_rank"][0]["blocking_ns_per_step_after"] == 0 < doc["by_rank"][0]["blocking_ns_per_step_before"]
    assert doc["by_rank"][1]["blocking_calls_delta"] == 0
    text = cli("compare", before, after, "--no-cache").output
    assert text.startswith("by rank (rank i of each folder, by name)") and text.count("\ntotals\n") == 2
    rows = [ln.split(",")[:3] for ln in cli("compare", before, after, "--format", "csv").output.splitlines()[1:]]
    assert {r[0] for r in rows} == {"0", "1"}
    (after / "run-rank-10.pt.trace.json.gz").unlink()
    for args in ((before, after), (before, KINETO["after"]), (before, before, after)):
        r = run_cli("compare", *args)
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "rank sets" in r.stderr, r.stderr
    r = run_cli("compare", before, before, "--format", "html")
    assert r.returncode == 2 and "--format html compares two traces" in r.stderr


def test_gpu_idle_counts_the_copys_own_device_on_a_real_shared_gpu_and_once_relabelled(tmp_path):
    """The two processes really shared device 0, so a copy's GPU idle counts both processes' kernels there; moving
    after's GPU rows to device 1 (a relabelled copy of the real export, synthetic in its device ids only) leaves
    before's copies only their own kernels. Both ways every long call's GPU idle equals plain SQL over its own
    device, and before's idle grows once the other process's kernels are elsewhere."""
    import shutil

    from test_ranks import plain_sql

    moved = tmp_path / "two-devices.sqlite"
    shutil.copy(TRACE, moved)
    truth = per_process_sql()
    after = max(truth, key=lambda pid: truth[pid]["pinned_share"])
    con = sqlite3.connect(moved)
    for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
        con.execute(f"UPDATE {t} SET deviceId = 1 WHERE (globalPid >> 24) & 16777215 = ?", (after,))
    con.commit()
    con.close()
    idle = {}
    for label, path in (("shared", TRACE), ("moved", moved)):
        rep = json.loads(run_cli("analyze", path, "--format", "json", "--top", "1000", "--no-cache").stdout)
        top = rep["reports"][0]["top"]
        ref = plain_sql(path)
        assert len(top) == len(ref) == rep["reports"][0]["totals"]["long_calls"]
        for t in top:
            r = ref[(t["pid"], t["api_start_ns"])]
            assert (t["host_ns"], t["gpu_idle_ns"], t["device"]) == (r["host_ns"], r["gpu_idle_ns"], r["device"])
        idle[label] = sum(t["gpu_idle_ns"] for t in top if t["pid"] != after)
        assert {t["device"] for t in top if t["pid"] == after} <= ({0} if label == "shared" else {1})
    assert idle["moved"] > idle["shared"]
