"""What a CI job and a reader see (issue 14): annotations at the offending Python line, a step summary that
lists each offending copy once, threshold --plot saying what it wrote, fix hints that fit the program (PyTorch
or CUDA C) and say how to get a file:line where the trace has none."""
import json
import re
import sqlite3

import pytest

from conftest import H200, SWEEP_TRACES, THIRDPARTY, run_cli

BEFORE = H200 / "qwen3vl-before.sqlite"


def test_annotations_point_at_the_python_line(tmp_path):
    r = run_cli("gate", BEFORE, env={"GITHUB_ACTIONS": "true"})
    assert r.returncode == 1
    doc = json.loads(run_cli("analyze", BEFORE, "--format", "json").stdout)["reports"][0]
    lines = {t["site_line"] for t in doc["top"] if t["waited_for_gpu"] and t["host_ns"] >= 100_000}
    got = re.findall(r"^::error file=([^,]+),line=(\d+),title=[^:]+::", r.stdout, re.M)
    assert {f"{f}:{n}" for f, n in got} == lines and len(got) == len(lines) >= 2
    # messages are escaped for the workflow command syntax: one physical line each
    assert all(ln.startswith("::error ") for ln in r.stdout.splitlines() if ln.startswith("::"))


def test_step_summary_lists_each_offending_copy_once(tmp_path):
    s = tmp_path / "summary.md"
    r = run_cli("gate", BEFORE, "--max-blocked-per-step", "1us", "--summary", s)   # two rules fail, same copies
    assert r.returncode == 1
    text = s.read_text()
    assert text.count("| max-long-calls | **fail**") == 1 and text.count("| max-blocked-per-step | **fail**") == 1
    offenders = [ln for ln in text.splitlines() if ln.startswith("- ") and not ln.startswith("- fix [")]
    assert len(offenders) == len(set(offenders)) == 4   # the 4 long-blocking copies of this trace
    assert sum(ln.startswith("- fix [") for ln in text.splitlines()) == 2   # each fix once, per source class


def test_threshold_plot_says_what_it_wrote(tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "t.png"
    r = run_cli("threshold", H200 / "h2d-sweep.sqlite", "--plot", png, "--format", "json")
    assert r.returncode == 0, r.stderr
    assert f"wrote {png}" in r.stderr and png.stat().st_size > 0
    json.loads(r.stdout)   # stdout is still the report alone


def fixes(path, *args):
    doc = json.loads(run_cli("analyze", path, "--format", "json", "--calls", "all", *args).stdout)["reports"][0]
    return {t["fix"] for t in doc["top"] if t["source_class"] == "pageable"}


def test_cuda_c_trace_gets_cuda_c_fixes():
    path = THIRDPARTY / "mordred__report1_old.sqlite"
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    torch_names = con.execute("SELECT count(*) FROM StringIds WHERE value LIKE '%at::native::%' "
                              "OR value LIKE '%c10::%' OR value LIKE 'THPVariable%'").fetchone()[0]
    con.close()
    assert torch_names == 0                                       # no PyTorch in this program
    (fix,) = fixes(path, "--min-duration", "50us")
    assert "cudaHostAlloc" in fix and "cudaHostRegister" in fix and "pin_memory" not in fix
    assert "--cudabacktrace=memory" in fix                        # no stack in this capture: how to get one


def test_native_sites_say_how_to_get_the_python_line():
    for fix in fixes(SWEEP_TRACES["2025.3-cudabacktrace"]):
        assert "pin_memory" in fix and fix.endswith("capture with `nsysh2d profile --python-backtrace`")
    for fix in fixes(BEFORE):                                     # Python sites known: no hint
        assert "--python-backtrace" not in fix
    r = run_cli("analyze", SWEEP_TRACES["2025.3-cudabacktrace"], env={"COLUMNS": "400"})
    assert "fix ?" not in r.stdout and "nsysh2d profile --python-backtrace" in r.stdout
