"""What blocking copies cost the GPU (issue 15): gpu_idle_ns per copy, per group, per step, in compare and the
gate, on H200 captures of our own workloads:
- workloads/train_loop.py, a DataLoader training loop with pageable (before) and pinned (after) batches;
- workloads/graph_probe.py, copies behind CUDA graph replays (graph- and node-level traces);
- workloads/d2h_probe.py, device-to-host copies into pageable, pinned and strided pinned destinations.
Every figure is checked against plain SQL over the export computed here (the union of kernel, memset and
graph-replay intervals on the copy's device, clipped to the call), and against the workloads' own host timers."""
import json
import re
import sqlite3
import statistics

import pytest

from conftest import H200

BEFORE, AFTER = H200 / "train-loop-before.sqlite", H200 / "train-loop-after.sqlite"
D2H = H200 / "d2h-probe.sqlite"
MIN_NS = 100_000


def _kv(line: str) -> dict:
    return dict(re.findall(r"(\w+)=(\S+)", line))


def traced_host(name: str) -> dict:
    """The workload's own host timer, printed during the traced run: variant/pattern -> fields."""
    out = {}
    for line in (H200 / name).read_text().splitlines():
        kv = _kv(line)
        out[kv.get("variant") or kv.get("pattern")] = kv
    return out


def sql_copies(path, copy_kind: int = 1):
    """Every memcpy call of one copy kind (1 = HtoD, 2 = DtoH) by plain SQL, with the GPU idle time during it:
    the call's duration minus the union of kernel, memset and graph-replay intervals on its device. Only rows of
    the CUDA runtime or driver: with backtraces nsys writes a call's row once more, as a backtrace event."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        busy_tables = [t for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMSET",
                                   "CUPTI_ACTIVITY_KIND_GRAPH_TRACE") if t in tables]
        busy = {}
        for t in busy_tables:
            for dev, s, e in con.execute(f"SELECT deviceId, start, end FROM {t}"):
                busy.setdefault(dev, []).append((s, e))
        calls = con.execute("""
            SELECT r.globalTid / 16777216 % 16777216, r.correlationId, r.start, r.end, m.deviceId, m.bytes
            FROM CUPTI_ACTIVITY_KIND_RUNTIME r
            JOIN StringIds s ON s.id = r.nameId AND s.value GLOB 'cu*Memcpy*'
            JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = r.correlationId AND m.copyKind = ?
            WHERE r.eventClass IN (SELECT id FROM ENUM_NSYS_EVENT_CLASS WHERE label IN ('CUDA runtime', 'CUDA driver'))""",
                            (copy_kind,)).fetchall()
        steps = con.execute("""
            SELECT e.globalTid / 16777216 % 16777216, e.start, e.end FROM NVTX_EVENTS e
            LEFT JOIN StringIds s ON s.id = e.textId
            WHERE e.end IS NOT NULL AND COALESCE(e.text, s.value) GLOB 'step [0-9]*'""").fetchall()
    finally:
        con.close()
    out = []
    for pid, corr, start, end, dev, nbytes in calls:
        covered, last = 0, start
        for s, e in sorted(busy.get(dev, [])):
            s, e = max(s, last), min(e, end)
            if e > s:
                covered += e - s
                last = e
        in_step = any(p == pid and s <= start and end <= e for p, s, e in steps)
        out.append({"correlation_id": corr, "host_ns": end - start, "gpu_idle_ns": end - start - covered,
                    "in_step": in_step, "bytes": nbytes})
    return out, len(steps)


def report(cli, path, *args):
    r = cli("analyze", str(path), "--format", "json", "--no-cache", "--top", "200", *args)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["reports"][0]


@pytest.mark.parametrize("path", [BEFORE, AFTER, H200 / "graph-probe-graph.sqlite",
                                  H200 / "graph-probe-node-graph.sqlite", H200 / "qwen3vl-before.sqlite"],
                         ids=["train-before", "train-after", "graph-replays", "graph-nodes", "qwen3vl"])
def test_gpu_idle_per_copy_equals_plain_sql(cli, path):
    rep = report(cli, path)
    ref, steps = sql_copies(path)
    long_ref = [c for c in ref if c["host_ns"] >= MIN_NS]
    by_id = {c["correlation_id"]: c for c in ref}
    assert len(rep["top"]) == len(long_ref)
    for t in rep["top"]:
        c = next(c for c in ref if c["host_ns"] == t["host_ns"] and c["bytes"] == t["bytes"])
        assert t["gpu_idle_ns"] == c["gpu_idle_ns"], t
    tot = rep["totals"]
    assert tot["gpu_idle_ns"] == sum(c["gpu_idle_ns"] for c in long_ref)
    assert sum(r["gpu_idle_ns"] for r in rep["by_kind"]) == tot["gpu_idle_ns"]
    for g in ("by_site", "by_class", "by_nvtx", "by_stream", "by_api"):
        assert sum(r["gpu_idle_ns"] for r in rep[g]) == tot["gpu_idle_ns"], g
    assert by_id  # the reference saw the copies
    inside = sum(c["gpu_idle_ns"] for c in long_ref if c["in_step"])
    assert rep["steps"]["steps"] == steps
    assert tot["gpu_idle_ns_per_step"] == pytest.approx(inside / steps)
    assert tot["outside_steps_long_calls"] == sum(1 for c in long_ref if not c["in_step"])
    assert tot["outside_steps_gpu_idle_ns"] == sum(c["gpu_idle_ns"] for c in long_ref if not c["in_step"])
    assert tot["long_ns_per_step"] == pytest.approx(sum(c["host_ns"] for c in long_ref if c["in_step"]) / steps)


def test_pageable_batches_idle_the_gpu_and_agree_with_the_host_timer(cli):
    """Before: each 36.75 MiB pageable batch copy stages the batch while no kernel runs; the trace's GPU idle
    per step is part of the idle the loop's own timer measured (wall - CUDA-event busy time), and the copy's
    host time agrees with the timer around the call. After: pinned batches cost the GPU nothing."""
    host = traced_host("train-trace-host.txt")
    before, after = report(cli, BEFORE), report(cli, AFTER)
    batches = [t for t in before["top"] if t["bytes"] == 64 * 3 * 224 * 224 * 4 and t["nvtx_path"].startswith("step ")]
    assert len(batches) == before["steps"]["steps"] == 30
    assert all(t["source_class"] == "pageable" and t["waited_for_gpu"] for t in batches)
    assert all(t["gpu_idle_ns"] >= 0.9 * t["host_ns"] for t in batches)
    median_us = statistics.median(t["host_ns"] for t in batches) / 1e3
    assert median_us == pytest.approx(float(host["before"]["copy_us_median"]), rel=0.10)
    per_step_ms = before["totals"]["gpu_idle_ns_per_step"] / 1e6
    assert 0.5 * float(host["before"]["gpu_idle_ms_per_step"]) <= per_step_ms <= float(host["before"]["gpu_idle_ms_per_step"])
    assert after["totals"]["gpu_idle_ns_per_step"] < 1e6
    assert after["totals"]["gpu_idle_ns_per_step"] / 1e6 <= float(host["after"]["gpu_idle_ms_per_step"])
    # Model init copies the weights before the first step: shown apart, not per step.
    for rep in (before, after):
        assert rep["totals"]["outside_steps_long_calls"] > 0
        assert all(t["nvtx_path"] is None or not t["nvtx_path"].startswith("step ") for t in rep["top"]
                   if t["bytes"] != 64 * 3 * 224 * 224 * 4 and t["bytes"] != 64 * 8)


def test_readme_throughput_table_is_the_medians_of_the_runs():
    runs = json.loads((H200 / "train-host.json").read_text())
    readme = (H200.parents[2] / "README.md").read_text()
    for v in ("before", "after"):
        rs = [r for r in runs if r["variant"] == v]
        assert len(rs) >= 5
        sps = statistics.median(r["steps_per_s"] for r in rs)
        idle = statistics.median(r["gpu_idle_ms_per_step"] for r in rs)
        copy = statistics.median(r["copy_us_median"] for r in rs) / 1e3
        row = f"| {v} | {len(rs)} | {sps:.1f} | {idle:.1f} ms | {copy:.2f} ms |"
        assert row in readme, row
    b = statistics.median(r["steps_per_s"] for r in runs if r["variant"] == "before")
    a = statistics.median(r["steps_per_s"] for r in runs if r["variant"] == "after")
    assert a > 1.2 * b
    assert f"{a / b:.2f}x" in readme


def test_compare_carries_gpu_idle(cli):
    r = cli("compare", str(BEFORE), str(AFTER), "--format", "json", "--no-cache")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)["compare"]
    b, a = report(cli, BEFORE)["totals"], report(cli, AFTER)["totals"]
    t = doc["totals"]
    assert (t["gpu_idle_ns_before"], t["gpu_idle_ns_after"]) == (b["gpu_idle_ns"], a["gpu_idle_ns"])
    assert t["gpu_idle_ns_delta"] == a["gpu_idle_ns"] - b["gpu_idle_ns"] < 0
    assert t["gpu_idle_ns_per_step_before"] == pytest.approx(b["gpu_idle_ns_per_step"])
    assert t["gpu_idle_ns_per_step_delta"] == pytest.approx(a["gpu_idle_ns_per_step"] - b["gpu_idle_ns_per_step"])
    pageable = next(r for r in doc["by_class"] if r["key"] == "pageable")
    assert pageable["gpu_idle_ns_per_step_before"] == pytest.approx(b["gpu_idle_ns_per_step"])
    table = cli("compare", str(BEFORE), str(AFTER), "--no-cache", env={"COLUMNS": "200"})
    assert "GPU idle per step (during long copies)" in table.stdout


def test_gate_rule_max_gpu_idle_per_step(cli, tmp_path):
    def gate(path, *args):
        return cli("gate", str(path), "--max-long-calls", "1000", "--format", "json", "--no-cache", *args)

    r = gate(BEFORE, "--max-gpu-idle-per-step", "1ms")
    assert r.exit_code == 1
    rule = next(x for x in json.loads(r.stdout)["verdicts"][0]["rules"] if x["name"] == "max-gpu-idle-per-step")
    per = report(cli, BEFORE)["totals"]["gpu_idle_ns_per_step"]
    assert f"{per / 1e6:.3f} ms GPU idle" in rule["message"] and rule["offenders"]
    assert gate(AFTER, "--max-gpu-idle-per-step", "1ms").exit_code == 0
    (tmp_path / "pyproject.toml").write_text('[tool.nsysh2d.gate]\nmax-gpu-idle-per-step = "1ms"\n')
    r = gate(BEFORE, "--config", str(tmp_path / "pyproject.toml"))
    assert r.exit_code == 1 and "max-gpu-idle-per-step" in r.stdout
    assert gate(AFTER, "--config", str(tmp_path / "pyproject.toml")).exit_code == 0


def test_groups_rank_by_gpu_idle(cli):
    for path in (BEFORE, H200 / "api-probe.sqlite"):
        rep = report(cli, path)
        for g in ("by_nvtx", "by_site", "by_class", "by_kind", "by_api"):
            keys = [(r["gpu_idle_ns"] // 100_000, r["long_ns"]) for r in rep[g]]
            assert keys == sorted(keys, reverse=True), (path.name, g)


# ------------------------------------------------------------------ device to host (issue 15.3)
D2H_CLASSES = {"cpu": "pageable", "copy-pageable": "pageable", "copy-pinned-strided": "pinned_strided",
               "copy-pinned": "pinned", "to-nonblocking": "pinned", "item": "pinned"}


def sql_sync_us(path, nvtx: str) -> float:
    """Median duration of the cudaStreamSynchronize calls inside the NVTX ranges named `nvtx`."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = con.execute("""
            SELECT r.end - r.start FROM CUPTI_ACTIVITY_KIND_RUNTIME r
            JOIN StringIds s ON s.id = r.nameId AND s.value GLOB 'cudaStreamSynchronize*'
            JOIN NVTX_EVENTS e ON e.globalTid = r.globalTid AND e.start <= r.start AND r.end <= e.end
            LEFT JOIN StringIds t ON t.id = e.textId
            WHERE COALESCE(e.text, t.value) = ?""", (nvtx,)).fetchall()
    finally:
        con.close()
    return statistics.median(ns for (ns,) in rows) / 1e3


def test_d2h_destinations_classified_with_fixes_and_host_timer(cli):
    rep = report(cli, D2H, "--direction", "d2h", "--min-duration", "0")
    host = traced_host("d2h-trace-host.txt")
    rows = [t for t in rep["top"] if t["nvtx_range"] in D2H_CLASSES]
    assert {t["nvtx_range"] for t in rows} == set(D2H_CLASSES)
    for name, cls in D2H_CLASSES.items():
        mine = [t for t in rows if t["nvtx_range"] == name]
        assert len(mine) == 4 and {t["source_class"] for t in mine} == {cls}, name
        timer_us = float(host[name]["median_us"])
        got_us = statistics.median(t["host_ns"] for t in mine) / 1e3
        if name == "item":
            # .item() copies into a pinned scalar and then waits in cudaStreamSynchronize, not in the copy.
            assert got_us < 100 and timer_us > 9000
            assert sql_sync_us(D2H, "item") == pytest.approx(timer_us, rel=0.10)
        elif cls == "pinned":
            assert got_us < 100 and timer_us < 200, name   # returns at once
            assert not any(t["host_ns"] >= MIN_NS for t in mine)
        else:
            assert got_us == pytest.approx(timer_us, rel=0.10), name
            assert all(t["waited_for_gpu"] and t["backlog_ns"] > 9e6 for t in mine), name
            # Behind the backlog the GPU is busy; only the transfer itself leaves it idle.
            assert all(0 < t["gpu_idle_ns"] < t["host_ns"] - 9e6 for t in mine), name
    strided = next(t for t in rows if t["nvtx_range"] == "copy-pinned-strided")
    assert "dstKind=Pageable and at::native::copy_kernel_cuda x2" in strided["evidence"]
    assert "contiguous pinned buffer" in strided["fix"]
    pageable = next(t for t in rows if t["nvtx_range"] == "copy-pageable")
    assert "pin_memory=True" in pageable["fix"] and "event" in pageable["fix"]
    by_class = {r["group"]: r for r in rep["by_class"]}
    assert by_class["pageable"]["blocking_calls"] >= 8 and "unknown" not in by_class
    ref, _ = sql_copies(D2H, copy_kind=2)
    assert sum(r["calls"] for r in rep["by_class"]) == len(ref)
    table = cli("analyze", str(D2H), "--direction", "d2h", "--no-cache", env={"COLUMNS": "200"}).stdout
    assert "fix THPVariable_copy_ > at::native::copy_kernel_cuda [pageable]: the destination is pageable" in table


def test_beyond_the_cap_gpu_idle_is_null_not_partial(cli):
    """With more long calls than NSYSH2D_GPU_IDLE_MAX, only the listed calls get GPU idle: groups, totals and
    per-step figures are null (not a partial sum), a warning says so, the gate rule cannot pass, compare shows
    no delta. The listed calls keep their exact figure."""
    import subprocess
    import sys

    from conftest import ROOT

    code = ("import json, sys; from click.testing import CliRunner; from nsysh2d.cli import main\n"
            "r = CliRunner().invoke(main, sys.argv[1:]); sys.stdout.write(r.stdout); sys.exit(r.exit_code)")
    env = {**__import__("os").environ, "NSYSH2D_GPU_IDLE_MAX": "20"}

    def run(*args):
        return subprocess.run([sys.executable, "-c", code, *map(str, args), "--no-cache"], capture_output=True,
                              text=True, env=env, cwd=ROOT)

    rep = json.loads(run("analyze", BEFORE, "--format", "json").stdout)["reports"][0]
    t = rep["totals"]
    assert t["long_calls"] > 20 and t["gpu_idle_ns"] is None and t["gpu_idle_ns_per_step"] is None
    assert all(r["gpu_idle_ns"] is None for r in rep["by_site"] + rep["by_kind"])
    assert any("NSYSH2D_GPU_IDLE_MAX=20" in w for w in rep["warnings"])
    ref = {c["host_ns"]: c["gpu_idle_ns"] for c in sql_copies(BEFORE)[0]}
    assert all(x["gpu_idle_ns"] == ref[x["host_ns"]] for x in rep["top"])
    g = run("gate", BEFORE, "--max-long-calls", "1000", "--max-gpu-idle-per-step", "1s", "--format", "json")
    rule = next(x for x in json.loads(g.stdout)["verdicts"][0]["rules"] if x["name"] == "max-gpu-idle-per-step")
    assert g.returncode == 1 and not rule["passed"] and "NSYSH2D_GPU_IDLE_MAX" in rule["message"]
    c = json.loads(run("compare", BEFORE, AFTER, "--format", "json").stdout)["compare"]["totals"]
    assert c["gpu_idle_ns_before"] is None and c["gpu_idle_ns_delta"] is None
