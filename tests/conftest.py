import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
SHARED = DATA / "shared"
H200 = DATA / "h200"
THIRDPARTY = DATA / "thirdparty"
SWEEP_TRACES = {
    "2023.4": SHARED / "h200-sweep-nsys2023.4.sqlite",
    "2025.3": SHARED / "h200-sweep-nsys2025.3.sqlite",
    "2025.3-cudabacktrace": SHARED / "h200-sweep-nsys2025.3-cudabacktrace.sqlite",
    "2025.3-pythonbacktrace": SHARED / "h200-sweep-nsys2025.3-pythonbacktrace.sqlite",
}
BEFORE = H200 / "qwen3vl-before.sqlite"
AFTER = H200 / "qwen3vl-after.sqlite"
SWEEP = H200 / "h2d-sweep.sqlite"


# The slow layer: a real Dask cluster, a real browser, torch, nsys, hypothesis, many processes at once,
# generated multi-million-row exports. `pytest -m "not slow"` is the inner loop; `pytest` runs everything.
SLOW_FILES = {"test_cluster.py", "test_html.py", "test_properties.py", "test_runtime_check.py",
              "test_h200_runtime_check.py", "test_workloads.py", "test_real_nsys.py", "test_profile.py",
              "test_benchmarks.py", "test_battery.py", "test_robustness.py", "test_cpus.py", "test_ci_example.py",
              # real-trace end to end on the Kineto captures (JSON parsing of MB-sized traces in each test)
              "test_kineto.py", "test_kineto_fuzz.py", "test_uva.py", "test_kineto_path.py",
              # real-trace equality with plain SQL per call (queued launches, the full backlog of every call)
              "test_h100_probes.py", "test_lazy_backlog.py",
              # torch and the hook; the H100 captures of issue 58 unpacked and analyzed several ways
              "test_site_hook.py", "test_h100_sites.py", "test_h100_steady.py",
              # hostile values through the CLI, one subprocess per case under a memory limit (issue 54)
              "test_trust_values.py",
              # benchmarks/lint_vllm.py end to end (a stand-in linter and the parse floor as subprocesses)
              "test_lint_vllm_bench.py",
              # issue 55 (the fast layer <= 2 minutes): whole-report runs over every Kineto capture from other
              # projects and of the 2021 layout, two-process and rank-set reports
              "test_kineto_thirdparty.py", "test_kineto_legacy.py", "test_h100_two_proc.py", "test_ranks.py",
              # every bundled export and generated files through the compiled per-call pass and the SQL steps
              "test_percall_exports.py",
              # GPU idle and backlog per long call against plain SQL over the whole qwen3vl traces
              "test_h200_gpu_idle.py"}


def fast_first(values, keep=1):
    """Parameters of which only the first `keep` run in the fast layer; the rest are slow (the same check on
    every bundled export: one in the inner loop, all of them in CI)."""
    return [v if i < keep else pytest.param(v, marks=pytest.mark.slow) for i, v in enumerate(values)]


def pytest_collection_modifyitems(items):
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)


# Modules whose subject is what the outputs say, not the cache: their tests share one cache folder, so a trace one
# test analyzed is served to the next from the cache (read back through from_json, as users get it).
SHARED_CACHE_FILES = {"test_hostile_strings.py", "test_outputs.py", "test_newcomer.py", "test_h200_gpu_idle.py",
                      "test_ranks.py", "test_trust_cli.py"}


@pytest.fixture(autouse=True)
def _isolated_cache(request, tmp_path, monkeypatch):
    # Every other test gets its own cache folder: no test sees another's cached reports.
    shared = request.path.name in SHARED_CACHE_FILES
    folder = request.getfixturevalue("_module_cache_dir") if shared else tmp_path
    monkeypatch.setenv("NSYSH2D_CACHE_DIR", str(folder / "cache"))
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    # Tables wrap to $COLUMNS: pytest-xdist's workers set it to 80, a user's shell may export it. Tests that
    # need a width say so (env={"COLUMNS": ...}); the rest see the piped default, as CI does.
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture(scope="module")
def _module_cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("module-cache")


@pytest.fixture
def cli():
    from nsysh2d.cli import main

    def run(*args, env=None):
        runner = CliRunner()
        return runner.invoke(main, [str(a) for a in args], env=env, catch_exceptions=False)

    return run


def cli_command() -> list[str]:
    """The installed console script, as a user runs it; this interpreter's module when the environment's
    bin folder is not on PATH (pytest run as .venv/bin/pytest without activating)."""
    exe = shutil.which("nsysh2d")
    return [exe] if exe else [sys.executable, "-m", "nsysh2d.cli"]


def run_cli(*args, env=None, cwd=None):
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(cli_command() + [str(a) for a in args], capture_output=True, text=True, env=full_env, cwd=cwd)


def edited_copy(source, path, *statements):
    """A copy of a real export at `path`, edited with sqlite3 (odd and hostile layouts made from real files)."""
    import sqlite3

    shutil.copy(source, path)
    con = sqlite3.connect(path)
    for s in statements:
        con.execute(s)
    con.commit()
    con.close()
    return path


def sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def listing(folder) -> list[str]:
    return sorted(os.listdir(folder))
