"""Baselines users can live with (issue 14): a trace passes against its own baseline, accepted findings carry
their reason, only new or grown findings fail, a pyproject's baseline path is relative to the pyproject, and
captures with other backtrace options still match (by NVTX range when call sites are named differently)."""
import json
import sqlite3

from conftest import H200, SWEEP_TRACES, run_cli

BEFORE, AFTER = H200 / "qwen3vl-before.sqlite", H200 / "qwen3vl-after.sqlite"


def gate_json(*args, cwd=None):
    r = run_cli("gate", *args, "--format", "json", cwd=cwd)
    return r.returncode, json.loads(r.stdout) if r.stdout.strip() else None, r.stderr


def rule(doc, name):
    return next(r for r in doc["verdicts"][0]["rules"] if r["name"] == name)


def test_a_trace_passes_against_its_own_baseline_and_the_reason_is_shown(tmp_path):
    b = tmp_path / "b.json"
    r = run_cli("baseline", BEFORE, "-o", b, "--accept", "vision copies, tracked in #7")
    assert r.returncode == 0, r.stderr
    assert json.loads(b.read_text())["accepted"] == "vision copies, tracked in #7"
    assert run_cli("gate", BEFORE).returncode == 1            # without the baseline: the findings fail
    code, doc, err = gate_json(BEFORE, "--baseline", b)
    assert code == 0, (doc, err)
    assert "vision copies, tracked in #7" in rule(doc, "no-new-sites")["message"]
    assert "at call sites the baseline does not accept" in rule(doc, "max-long-calls")["message"]


def test_only_new_findings_fail(tmp_path):
    """A baseline whose record of one blocking site is removed: that site is new again and fails both rules,
    while the other accepted site does not count."""
    b = tmp_path / "b.json"
    assert run_cli("baseline", BEFORE, "-o", b).returncode == 0
    base = json.loads(b.read_text())
    sites = [r for r in base["by_site"] if r["blocking_calls"]]
    dropped = sites[0]["group"]
    base["by_site"] = [r for r in base["by_site"] if r["group"] != dropped]
    b.write_text(json.dumps(base))
    code, doc, _ = gate_json(BEFORE, "--baseline", b)
    assert code == 1
    assert rule(doc, "no-new-sites")["offenders"][0]["site"] == dropped
    n = sites[0]["blocking_calls"]
    assert rule(doc, "max-long-calls")["message"].startswith(f"{n} long-blocking h2d copies")


def test_pyproject_baseline_path_is_relative_to_the_pyproject(tmp_path):
    proj = tmp_path / "proj"
    (proj / "ci").mkdir(parents=True)
    assert run_cli("baseline", BEFORE, "-o", proj / "ci" / "b.json").returncode == 0
    (proj / "pyproject.toml").write_text('[tool.nsysh2d.gate]\nbaseline = "ci/b.json"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, doc, err = gate_json(BEFORE, "--config", proj / "pyproject.toml", cwd=elsewhere)
    assert code == 0, err
    assert {r["name"] for r in doc["verdicts"][0]["rules"]} >= {"no-new-sites", "no-growth"}


def test_baseline_matches_across_capture_options(tmp_path):
    """The same sweep captured without backtraces (sites '(no backtrace)') and with CUDA backtraces (native
    frames): every site would be new; findings are matched by NVTX range instead: plain SQL shows every range
    with a copy of >= 2 ms in the second file among those of the first."""
    plain, native = SWEEP_TRACES["2025.3"], SWEEP_TRACES["2025.3-cudabacktrace"]
    b = tmp_path / "b.json"
    assert run_cli("baseline", plain, "-o", b).returncode == 0
    code, doc, err = gate_json(native, "--baseline", b, "--tolerance", "50%")
    assert code == 0, (doc, err)
    msg = rule(doc, "no-new-sites")["message"]
    assert msg.startswith("0 NVTX ranges") and "name call sites differently" in msg

    def ranges(path):
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = {n for (n,) in con.execute("""
            SELECT DISTINCT COALESCE(nv.text, s.value) FROM CUPTI_ACTIVITY_KIND_RUNTIME r
            JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = r.correlationId AND m.copyKind = 1
            JOIN NVTX_EVENTS nv ON nv.globalTid = r.globalTid AND nv.start <= r.start AND nv.end >= r.end
            LEFT JOIN StringIds s ON s.id = nv.textId
            WHERE r.end - r.start >= 2000000""")}
        con.close()
        return rows
    assert ranges(native) and ranges(native) <= ranges(plain)
    # The old behaviour would have failed: the sites themselves differ.
    base_sites = {r["group"] for r in json.loads(b.read_text())["by_site"] if r["blocking_calls"]}
    assert base_sites == {"(no backtrace)"}
