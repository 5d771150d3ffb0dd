"""The GitHub Actions example of docs/examples/h2d-gate.yml, run step by step as GitHub runs it (issue 14):
each `run:` in a shell from the repository root, GITHUB_ACTIONS=true, GITHUB_STEP_SUMMARY a file; the
install step is left out (nsysh2d is installed in the test environment)."""
import json
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET

import yaml

from conftest import ROOT

WORKFLOW = ROOT / "docs" / "examples" / "h2d-gate.yml"


def test_the_documented_workflow_runs_and_does_what_it_says(tmp_path):
    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"]["gate"]["steps"]
    runs = [s for s in steps if "run" in s and not s["name"].startswith("Install")]
    assert len(runs) == 3
    work = tmp_path / "repo"
    shutil.copytree(ROOT / "tests" / "data" / "h200", work / "tests" / "data" / "h200")
    summary = tmp_path / "summary.md"
    env = {**os.environ, "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary),
           "NSYSH2D_CACHE_DIR": str(tmp_path / "cache")}
    for step in runs:
        r = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=work, env=env, capture_output=True, text=True)
        assert r.returncode == 0, (step["name"], r.stdout, r.stderr)
    base = json.loads((work / "nsysh2d-baseline.json").read_text())
    assert base["accepted"] == "M-RoPE and vision position copies of the unfixed run"
    suites = ET.parse(work / "gate.xml").getroot()
    cases = {c.get("name"): c for c in suites.iter("testcase")}
    assert {"max-long-calls", "no-new-sites", "no-growth"} <= set(cases)
    assert not any(c.find("failure") is not None for c in cases.values())
    assert "**PASS**" in summary.read_text() and "qwen3vl-after.sqlite" in summary.read_text()
    assert json.loads((work / "gate.json").read_text())["passed"] is True
    # The same gate on the unfixed trace fails as CI would show it: exit 1 and annotations on the lines.
    r = subprocess.run(["bash", "-c", runs[2]["run"].replace("qwen3vl-after", "qwen3vl-before")], cwd=work, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 1 and json.loads((work / "gate.json").read_text())["passed"] is False
    plain = subprocess.run(["nsysh2d", "gate", "tests/data/h200/qwen3vl-before.sqlite"], cwd=work, env=env,
                           capture_output=True, text=True)
    assert "::error file=workloads/qwen3vl_inputs.py,line=" in plain.stdout
