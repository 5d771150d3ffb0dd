"""The committed H200 captures of workloads/qwen3vl.py: sites, classes, backlog, compare, gate."""
import json
import xml.etree.ElementTree as ET

from conftest import AFTER, BEFORE, SWEEP_TRACES
from nsysh2d.analysis import Analysis, Options

MROPE = "workloads/qwen3vl_inputs.py:copy_to_device"
POS_IDS = "workloads/qwen3vl_inputs.py:vision_inputs_to_device"


def report(path, **kw):
    a = Analysis.open(str(path))
    try:
        return a.report(Options(**kw), groups=("site", "class", "nvtx"))
    finally:
        a.close()


def test_before_blocks_at_both_sites_with_their_fix():
    rep = report(BEFORE, top=50)
    sites = {r["group"]: r for r in rep["by_site"]}
    assert sites[MROPE]["blocking_calls"] >= 1
    assert sites[POS_IDS]["blocking_calls"] >= 1
    blocking = [t for t in rep["top"] if t["waited_for_gpu"]]
    assert blocking and {t["site"] for t in blocking} == {MROPE, POS_IDS}
    for t in blocking:
        if t["site"] == MROPE:
            assert t["source_class"] == "pinned_strided" and "rows" in t["fix"]
            assert t["nvtx_range"] == "mrope_copy"
        else:
            assert t["source_class"] == "pageable" and "pin_memory" in t["fix"]
            assert t["nvtx_range"] == "vision_pos_ids"
    assert rep["steps"]["steps"] == 8


def test_blocked_time_is_the_backlog():
    rep = report(BEFORE, top=1)
    worst = rep["top"][0]
    assert worst["site"] == MROPE and worst["host_ns"] > 5_000_000
    # The call waited for the stream to drain: backlog ~ wait ~ host time.
    assert abs(worst["backlog_ns"] - worst["wait_ns"]) < 0.05 * worst["host_ns"]
    assert worst["wait_ns"] > 0.9 * worst["host_ns"]


def test_after_has_no_blocking_copies():
    rep = report(AFTER, top=50)
    assert rep["totals"]["blocking_calls"] == 0
    classes = {r["group"] for r in rep["by_class"]}
    assert "pinned_strided" not in classes
    # The long calls that remain are asynchronous: their GPU copy ran far later than they returned.
    for t in rep["top"]:
        assert not t["waited_for_gpu"] and t["wait_ns"] > 100 * t["host_ns"]


def test_python_backtraces_give_file_and_line():
    a = Analysis.open(str(BEFORE))
    df = a.copies()
    a.close()
    h2d = df.filter(df["direction"] == "h2d")
    assert h2d["site_origin"].drop_nulls().unique().to_list() == ["python"]
    lines = set(h2d.filter(h2d["site"] == MROPE)["site_line"].to_list())
    assert len(lines) == 1 and next(iter(lines)).startswith("workloads/qwen3vl_inputs.py:")


def test_by_class_tells_strided_from_pageable(cli):
    r = cli("analyze", SWEEP_TRACES["2025.3-cudabacktrace"], "--by", "class", "--format", "json")
    classes = {c["group"]: c["calls"] for c in json.loads(r.stdout)["reports"][0]["by_class"]}
    assert classes == {"pageable": 64, "pinned_strided": 32, "pinned": 160}


def test_gate_before_fails_after_passes(cli):
    r = cli("gate", BEFORE)
    assert r.exit_code == 1
    assert "FAIL" in r.stdout and MROPE.split(":")[0] in r.stdout and "vision_pos_ids" in r.stdout
    r = cli("gate", AFTER)
    assert r.exit_code == 0, r.stdout
    assert r.stdout.startswith("PASS")


def test_gate_count_long_and_kinds(cli):
    # Counting every long call, the after trace's asynchronous long calls fail the gate...
    assert cli("gate", AFTER, "--count", "long").exit_code == 1
    # ...unless only pageable sources are looked at.
    assert cli("gate", AFTER, "--count", "long", "--kind", "Pageable").exit_code == 0
    assert cli("gate", BEFORE, "--max-long-calls", "10").exit_code == 0


def test_gate_per_step_rule(cli):
    assert cli("gate", BEFORE, "--max-long-calls", "99", "--max-blocked-per-step", "1ms").exit_code == 1
    assert cli("gate", AFTER, "--max-long-calls", "99", "--max-blocked-per-step", "1ms").exit_code == 0
    r = cli("gate", SWEEP_TRACES["2025.3"], "--max-long-calls", "999", "--max-blocked-per-step", "1ms")
    assert r.exit_code == 1 and "no NVTX or record_function range matches the step pattern" in r.stdout


def test_gate_junit_and_summary(cli, tmp_path):
    junit, summary = tmp_path / "gate.xml", tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    r = cli("gate", BEFORE, AFTER, "--junit", junit, "--summary", summary)
    assert r.exit_code == 1
    root = ET.parse(junit).getroot()
    suites = root.findall("testsuite")
    assert len(suites) == 2
    assert suites[0].get("failures") == "1" and suites[1].get("failures") == "0"
    case = suites[0].find("testcase")
    assert case.get("name") == "max-long-calls"
    assert "pinned_strided" in case.find("failure").text
    text = summary.read_text()
    assert text.startswith("# earlier step\n")  # appended, as $GITHUB_STEP_SUMMARY expects
    assert "**FAIL**" in text and "**PASS**" in text and "| max-long-calls |" in text


def test_gate_github_annotations(cli):
    r = cli("gate", BEFORE, env={"GITHUB_ACTIONS": "true"})
    assert r.exit_code == 1
    assert any(line.startswith("::error title=nsysh2d gate max-long-calls::") for line in r.stdout.splitlines())


def test_gate_json(cli):
    r = cli("gate", BEFORE, "--format", "json")
    doc = json.loads(r.stdout)
    assert doc["passed"] is False and doc["verdicts"][0]["rules"][0]["offenders"]


def test_baseline_round_trip(cli, tmp_path):
    base = tmp_path / "baseline.json"
    assert cli("baseline", AFTER, "-o", base).exit_code == 0
    r = cli("gate", BEFORE, "--max-long-calls", "99", "--baseline", base)
    assert r.exit_code == 1 and "no-new-sites" in r.stdout and "copy_to_device" in r.stdout
    assert cli("gate", AFTER, "--baseline", base).exit_code == 0
    # A before-trace baseline accepts the before trace itself (no new sites, no growth).
    base2 = tmp_path / "b2.json"
    cli("baseline", BEFORE, "-o", base2)
    assert cli("gate", BEFORE, "--max-long-calls", "99", "--baseline", base2).exit_code == 0


def test_gate_settings_from_pyproject(cli, tmp_path, monkeypatch):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").write_text("[tool.nsysh2d.gate]\nmax-long-calls = 10\n")
    monkeypatch.chdir(proj)
    assert cli("gate", BEFORE).exit_code == 0           # from pyproject
    assert cli("gate", BEFORE, "--max-long-calls", "0").exit_code == 1   # the command line wins
    (proj / "pyproject.toml").write_text("[tool.nsysh2d.gate]\nmax-long-cals = 10\n")
    r = cli("gate", BEFORE)
    assert r.exit_code == 2 and "unknown key" in r.stderr


def test_compare_shows_sites_gone_per_step(cli):
    r = cli("compare", BEFORE, AFTER, "--format", "json")
    assert r.exit_code == 0
    c = json.loads(r.stdout)["compare"]
    assert c["per_step"] is True
    t = c["totals"]
    assert t["blocking_calls_before"] >= 2 and t["blocking_calls_after"] == 0
    assert t["blocking_ns_per_step_before"] > t["blocking_ns_per_step_after"] == 0
    gone = {d["key"] for d in c["disappeared"] if d["group"] == "site"}
    assert gone == {MROPE, POS_IDS}
    assert c["appeared"] == []
    r = cli("compare", BEFORE, AFTER)
    assert "gone: site workloads/qwen3vl_inputs.py:copy_to_device" in r.stdout
    assert "per step" in r.stdout
