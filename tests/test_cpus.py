"""Threads of an analysis (nsysh2d/cpus.py): the CPUs this process may use (affinity, cgroup quota), shared
among parallel analyses, NSYSH2D_THREADS to override; DuckDB's memory limit grows with the threads; the
results do not depend on the thread count."""
import json
import os
import re
import sqlite3
import subprocess
import sys

import pytest

from conftest import BEFORE, ROOT, run_cli

from nsysh2d import cpus
from nsysh2d.source.connection import memory_limit

needs_affinity = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux only")


def _one_cpu():
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def _open_settings(env=None, preexec=None) -> dict:
    """Opens a real export in a fresh process and returns what its DuckDB connection was given."""
    code = ("import json; from nsysh2d.source import Trace; t = Trace.open(%r); "
            "print(json.dumps({'threads': t.threads, 'duckdb_threads': t.con.execute(\"SELECT current_setting("
            "'threads')\").fetchone()[0], 'limit': t.con.execute(\"SELECT current_setting('memory_limit')\")"
            ".fetchone()[0]}))" % str(BEFORE))
    env = {k: v for k, v in os.environ.items() if k not in ("NSYSH2D_THREADS", "NSYSH2D_MEMORY_LIMIT")} | (env or {})
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, preexec_fn=preexec)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _duckdb_shows(limit: str) -> str:
    import duckdb

    con = duckdb.connect(config={"memory_limit": limit})
    return con.execute("SELECT current_setting('memory_limit')").fetchone()[0]


@needs_affinity
def test_one_allowed_cpu_gives_one_thread_whatever_the_host_has():
    # os.cpu_count() and DuckDB's own default would still say the host's count here
    got = _open_settings(preexec=_one_cpu)
    assert got["threads"] == 1 and got["duckdb_threads"] == 1
    assert got["limit"] == _duckdb_shows("160MB")


def test_nsysh2d_threads_sets_threads_and_a_memory_limit_that_grows_with_them():
    got = _open_settings({"NSYSH2D_THREADS": "16"})
    assert got["threads"] == 16 and got["duckdb_threads"] == 16
    assert got["limit"] == _duckdb_shows("720MB")   # 160 MB for 2 threads, 40 MB for each one more
    assert _open_settings({"NSYSH2D_THREADS": "16", "NSYSH2D_MEMORY_LIMIT": "1GB"})["limit"] == _duckdb_shows("1GB")
    assert [memory_limit(t) for t in (1, 2, 3, 8)] == ["160MB", "160MB", "200MB", "400MB"]


def test_default_threads_are_the_usable_cpus_capped(monkeypatch):
    monkeypatch.delenv("NSYSH2D_THREADS", raising=False)
    n = cpus.usable_cpus()
    assert 1 <= n <= (os.cpu_count() or 1)
    assert cpus.analysis_threads() == min(n, cpus.MAX_THREADS)
    try:
        cpus.share(n + 1)   # more parallel analyses than CPUs: one thread each, never zero
        assert cpus.analysis_threads() == 1
    finally:
        cpus.share(1)


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5"])
def test_a_bad_nsysh2d_threads_is_one_line_exit_2(value):
    r = run_cli("analyze", BEFORE, "--no-cache", env={"NSYSH2D_THREADS": value})
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [f"nsysh2d: error: bad NSYSH2D_THREADS={value!r}: a whole number of "
                                             "threads, 1 or more"]


def test_cgroup_quota_files(tmp_path):
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "cpu.max").write_text("150000 100000\n")
    assert cpus.cgroup_cpu_quota(str(v2)) == 1.5
    assert cpus.usable_cpus(str(v2)) <= 2
    (v2 / "cpu.max").write_text("max 100000\n")
    assert cpus.cgroup_cpu_quota(str(v2)) is None
    v1 = tmp_path / "v1"
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("100000\n")
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert cpus.cgroup_cpu_quota(str(v1)) == 1.0 and cpus.usable_cpus(str(v1)) == 1
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert cpus.cgroup_cpu_quota(str(v1)) is None
    assert cpus.cgroup_cpu_quota(str(tmp_path / "none")) is None


@pytest.mark.parametrize("engine", [[], ["--scheduler", "local"]], ids=["pool", "local-dask-cluster"])
def test_parallel_reports_share_the_cpus(tmp_path, engine):
    # -j 2 on this machine's CPUs: each worker's analysis gets its share (NSYSH2D_TIMING prints it at open)
    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    a.write_bytes(BEFORE.read_bytes())
    b.write_bytes(BEFORE.read_bytes())
    r = run_cli("analyze", a, b, "-j", "2", *engine, "--no-cache", "--format", "json", env={"NSYSH2D_TIMING": "1"})
    assert r.returncode == 0, r.stderr
    per = max(1, min(cpus.usable_cpus() // 2, cpus.MAX_THREADS))
    # the other timing lines of the two workers may land mid-line; this one is a single write
    found = re.findall(r"nsysh2d: threads \d+, DuckDB memory limit \w+", r.stderr)
    assert found == [f"nsysh2d: threads {per}, DuckDB memory limit {memory_limit(per)}"] * 2


@pytest.fixture(scope="module")
def scaled(tmp_path_factory):
    """A scaled export of 1 M runtime rows: the SQLite readers split it into as many parts as threads (up to 5)."""
    out = tmp_path_factory.mktemp("cpus") / "scaled.sqlite"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "make_large.py"), "--scale", "0.05", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.parametrize("source", ["real", "scaled"])
def test_results_do_not_depend_on_the_thread_count(source, request):
    path = BEFORE if source == "real" else request.getfixturevalue("scaled")
    outs = {}
    for t in ("1", "3", "8"):
        r = run_cli("analyze", path, "--no-cache", "--format", "json", env={"NSYSH2D_THREADS": t})
        assert r.returncode == 0, r.stderr
        outs[t] = r.stdout
    assert outs["1"] == outs["3"] == outs["8"]
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    h2d = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 1").fetchone()[0]
    con.close()
    assert json.loads(outs["1"])["reports"][0]["totals"]["calls"] == h2d > 0   # one call per H2D copy in both
