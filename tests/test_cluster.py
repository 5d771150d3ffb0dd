"""Many reports on a real Dask cluster (issue 17): a `dask scheduler` and two `dask worker` processes on
127.0.0.1, `--scheduler local` (a LocalCluster of worker processes), a worker killed mid-run, a cluster without
workers, and the nsys recipe through the real nsys CLI. Results must equal the local run's, byte for byte."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import H200, ROOT, run_cli

REPORTS = [H200 / "qwen3vl-before.sqlite", H200 / "train-loop-before.sqlite", H200 / "train-loop-after.sqlite",
           H200 / "d2h-probe.sqlite", H200 / "graph-probe-graph.sqlite"]


def _bin(name):
    exe = Path(sys.executable).parent / name
    return str(exe) if exe.exists() else shutil.which(name)


@pytest.fixture
def cluster(tmp_path):
    """A scheduler and 2 single-threaded worker processes on 127.0.0.1; yields (address, worker Popens)."""
    env = {**os.environ, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "3"}
    sched_file = tmp_path / "scheduler.json"
    procs = [subprocess.Popen([_bin("dask"), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                               "--scheduler-file", str(sched_file)], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)]
    deadline = time.time() + 60
    while not sched_file.exists() and time.time() < deadline:
        time.sleep(0.2)
    address = json.loads(sched_file.read_text())["address"]
    workers = [subprocess.Popen([_bin("dask"), "worker", address, "--nthreads", "1", "--nworkers", "1",
                                 "--no-nanny", "--no-dashboard", "--host", "127.0.0.1"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
               for _ in range(2)]
    procs += workers
    from distributed import Client

    with Client(address, timeout="30s") as c:
        c.wait_for_workers(2, timeout=60)
    try:
        yield address, workers
    finally:
        for p in reversed(procs):
            p.kill()
            p.wait(timeout=30)


def analyze(*args, env=None):
    r = run_cli("analyze", *args, "--format", "json", "--no-cache", env=env, cwd=ROOT)
    return r, (json.loads(r.stdout) if r.stdout.strip() else None)


def test_analyze_on_a_real_cluster_equals_the_local_run(cluster, tmp_path):
    address, _ = cluster
    paths = [*map(str, REPORTS), str(tmp_path / "missing.sqlite")]
    local, dl = analyze(*paths)
    remote, dr = analyze(*paths, "--scheduler", address)
    assert local.returncode == remote.returncode == 2          # the missing report: an errors entry
    assert dr == dl and len(dr["reports"]) == len(REPORTS)
    assert [e["path"] for e in dr["errors"]] == [paths[-1]]
    table = run_cli("analyze", *map(str, REPORTS), "--no-cache", "--scheduler", address, cwd=ROOT)
    assert table.stdout == run_cli("analyze", *map(str, REPORTS), "--no-cache", cwd=ROOT).stdout


def test_kineto_rank_folder_and_api_summary_on_the_cluster(cluster, tmp_path):
    """Issue 39: one Kineto file per rank in a folder, on the cluster, as in the local run; api-summary too
    (issue 36: it is a job like the report)."""
    import shutil

    address, _ = cluster
    for rank, name in enumerate(("qwen3vl-before", "qwen3vl-after")):
        shutil.copy(ROOT / "tests/data/kineto" / f"{name}.pt.trace.json.gz", tmp_path / f"q-rank-{rank}.pt.trace.json.gz")
    local, dl = analyze(tmp_path)
    remote, dr = analyze(tmp_path, "--scheduler", address)
    assert local.returncode == remote.returncode == 0 and dr == dl and len(dr["reports"]) == 2
    assert {r["format"] for r in dr["reports"]} == {"kineto"}
    summary = [run_cli("api-summary", tmp_path, "--format", "json", "--no-cache", *extra, cwd=ROOT)
               for extra in ([], ["--scheduler", address])]
    assert summary[0].returncode == summary[1].returncode == 0
    assert json.loads(summary[0].stdout) == json.loads(summary[1].stdout)


def test_compare_gate_baseline_on_the_cluster(cluster, tmp_path):
    address, _ = cluster
    env = {"NSYSH2D_SCHEDULER": address}     # the environment variable names the scheduler
    before, after = map(str, REPORTS[1:3])
    for args in (["compare", before, after, "--format", "json"],
                 ["gate", *map(str, REPORTS), "--format", "json", "--max-gpu-idle-per-step", "1ms"]):
        a, b = run_cli(*args, "--no-cache", env=env, cwd=ROOT), run_cli(*args, "--no-cache", cwd=ROOT)
        assert (a.returncode, a.stdout) == (b.returncode, b.stdout), args
    outs = [tmp_path / "b1.json", tmp_path / "b2.json"]
    for out, extra in zip(outs, (["--scheduler", address], [])):
        assert run_cli("baseline", before, "-o", str(out), "--no-cache", *extra, cwd=ROOT).returncode == 0
    assert outs[0].read_bytes() == outs[1].read_bytes()


def test_local_cluster_equals_the_local_run_and_pyproject_cannot_choose_a_scheduler(tmp_path):
    """--scheduler local gives the local run's results. A scheduler named in the checkout's pyproject.toml
    is refused with one line (issue 37: a pull request could point the gate at its own scheduler and have
    the gate take its results), whatever its value, and nothing is analyzed."""
    paths = [str(p) for p in REPORTS[:3]]
    r = run_cli("analyze", *paths, "--format", "json", "--no-cache", "-j", "2", "--scheduler", "local", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    local = run_cli("analyze", *paths, "--format", "json", "--no-cache", cwd=ROOT)
    assert json.loads(r.stdout) == json.loads(local.stdout)
    for value in ('"tcp://127.0.0.1:1"', '"local"', "7"):
        (tmp_path / "pyproject.toml").write_text(f"[tool.nsysh2d]\nscheduler = {value}\n")
        for cmd in (["analyze", paths[0]], ["gate", paths[0]], ["compare", paths[0], paths[0]]):
            bad = run_cli(*cmd, "--no-cache", cwd=tmp_path)
            assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
            assert "not read from a project file" in bad.stderr and not bad.stdout
        # the command line (or the environment) still chooses
        ok = run_cli("analyze", paths[0], "--no-cache", "--format", "json", cwd=tmp_path,
                     env={"NSYSH2D_SCHEDULER": "local"})
        assert ok.returncode == 0, ok.stderr


def test_a_worker_killed_mid_run_is_retried(cluster, tmp_path):
    """64 reports; one of the two workers is killed while it analyzes: its tasks go to the other one."""
    address, workers = cluster
    paths = []
    for i in range(64):
        p = tmp_path / f"rank{i:02d}.sqlite"
        shutil.copyfile(REPORTS[i % 2], p)
        paths.append(str(p))
    proc = subprocess.Popen([_bin("nsysh2d"), "analyze", *paths, "--format", "json", "--no-cache",
                             "--scheduler", address], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    from distributed import Client

    with Client(address, timeout="30s") as c:
        deadline = time.time() + 120
        while time.time() < deadline:
            busy = {w: t for w, t in c.processing().items() if t}
            if len(busy) == 2:
                break
            time.sleep(0.05)
        assert len(busy) == 2, "the tasks never ran on both workers"
        workers[0].send_signal(signal.SIGKILL)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    doc = json.loads(out)
    assert [r["path"] for r in doc["reports"]] == paths and "errors" not in doc
    local = run_cli("analyze", *paths[:2], "--format", "json", "--no-cache", cwd=ROOT)
    want = json.loads(local.stdout)["reports"]
    for i, rep in enumerate(doc["reports"]):
        assert rep == want[i % 2] | {"path": paths[i]}


def test_no_worker_left_is_an_error_not_a_hang(tmp_path):
    sched_file = tmp_path / "s.json"
    p = subprocess.Popen([_bin("dask"), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                          "--scheduler-file", str(sched_file)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while not sched_file.exists() and time.time() < deadline:
            time.sleep(0.2)
        address = json.loads(sched_file.read_text())["address"]
        r = run_cli("analyze", str(REPORTS[0]), "--no-cache", "--scheduler", address,
                    env={"NSYSH2D_NO_WORKER_TIMEOUT": "3"}, cwd=ROOT)
        assert r.returncode == 70 and "had no worker for 3 s" in r.stderr
        assert "Traceback" not in r.stderr
    finally:
        p.kill()
        p.wait(timeout=30)


def test_unreachable_scheduler_and_missing_dask():
    r = run_cli("analyze", str(REPORTS[0]), "--no-cache", "--scheduler", "tcp://127.0.0.1:9", cwd=ROOT)
    assert r.returncode == 2 and r.stderr.startswith("nsysh2d: error: cannot reach the Dask scheduler")
    assert r.stderr.count("\n") == 1
    code = ("import sys; sys.modules['distributed'] = None\n"
            "from nsysh2d.cli import main\n"
            f"sys.argv = ['nsysh2d', 'analyze', {str(REPORTS[0])!r}, '--no-cache', '--scheduler', 'local']\n"
            "main()")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "pip install 'nsysh2d[dask]'" in r.stderr and "Traceback" not in r.stderr


# ------------------------------------------------------------------ the nsys recipe, through the real nsys CLI
@pytest.fixture
def real_nsys():
    from nsysh2d.capture import nsys as nsysmod

    try:
        return nsysmod.find_nsys()
    except Exception:
        if os.environ.get("CI"):
            pytest.fail("CI has no nsys CLI: .ci/run installs one")
        pytest.skip("no nsys CLI on this machine (.ci/run installs one)")


def _recipe(real_nsys, inputs, mode, out, cwd):
    """Runs the recipe the README's way (works on an install with the recipe runner's folder and on Debian's,
    which lacks it); returns the nsys process."""
    from nsysh2d.capture.recipe_runner import recipe_runner_gap

    folder = run_cli("recipe-path").stdout.strip()
    assert (Path(folder) / "nsysh2d_h2d" / "metadata.json").is_file()
    env = {**os.environ, "NSYS_RECIPE_PATH": folder, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    runner = run_cli("recipe-path", "--nsys-shadow", "--nsys", real_nsys).stdout.strip()
    if recipe_runner_gap(real_nsys) is None:
        assert runner == real_nsys
    else:
        plain = subprocess.run([real_nsys, "recipe", "nsysh2d_h2d", "--help"], capture_output=True, text=True,
                               env=env, timeout=120)
        assert "third_party" in plain.stdout + plain.stderr and runner != real_nsys
    return subprocess.run([runner, "recipe", "nsysh2d_h2d", "--input", *inputs, "--mode", mode, "--output",
                           str(out), "--no-cache"], capture_output=True, text=True, env=env, cwd=cwd, timeout=600)


@pytest.mark.parametrize("mode", ["none", "concurrent", "dask-futures"])
def test_nsys_recipe_runs_the_same_analysis(real_nsys, tmp_path, mode):
    inputs = [*map(str, REPORTS[:3]), str(tmp_path / "missing.sqlite")]
    r = _recipe(real_nsys, inputs, mode, tmp_path / "out", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "out" / "reports.json").read_text())
    local = json.loads(run_cli("analyze", *inputs, "--format", "json", "--no-cache", cwd=ROOT).stdout)
    assert doc == local
    analysis = json.loads((tmp_path / "out" / "out.nsys-analysis").read_text())
    assert analysis["Mode"] == mode and analysis["Reports"] == 3 and analysis["Errors"] == 1
    assert "not analyzed:" in (tmp_path / "out" / "report.txt").read_text()


def test_nsys_recipe_expands_folders_as_the_cli(real_nsys, tmp_path):
    """Issue 55: the recipe's inputs are the CLI's (source.files.expand_inputs): a folder's Kineto traces are
    analyzed too, in name order with numbers as numbers (rank2, rank3, rank10), and a JSON file that is no trace
    is left out."""
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    kineto = ROOT / "tests/data/kineto"
    shutil.copy(kineto / "qwen3vl-before.pt.trace.json.gz", ranks / "q-rank10.pt.trace.json.gz")
    shutil.copy(kineto / "qwen3vl-after.pt.trace.json.gz", ranks / "q-rank2.pt.trace.json.gz")
    shutil.copy(REPORTS[1], ranks / "q-rank3.sqlite")
    (ranks / "config.json").write_text('{"not": "a trace"}')
    r = _recipe(real_nsys, [str(ranks)], "none", tmp_path / "out", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    want = [str(ranks / n) for n in ("q-rank2.pt.trace.json.gz", "q-rank3.sqlite", "q-rank10.pt.trace.json.gz")]
    analysis = json.loads((tmp_path / "out" / "out.nsys-analysis").read_text())
    assert analysis["InputFiles"] == want and analysis["Reports"] == 3 and analysis["Errors"] == 0
    doc = json.loads((tmp_path / "out" / "reports.json").read_text())
    assert [rep["path"] for rep in doc["reports"]] == want
    assert [rep["format"] for rep in doc["reports"]] == ["kineto", "nsys-sqlite", "kineto"]
    local = json.loads(run_cli("analyze", str(ranks), "--format", "json", "--no-cache", cwd=tmp_path).stdout)
    assert doc == local
