"""Smoke run of the benchmark tools at a tiny size (timings are printed, never asserted)."""
import subprocess
import sys

import pytest

from conftest import ROOT


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """benchmarks/make_large.py at 0.002x, made once for this file's tests."""
    big = tmp_path_factory.mktemp("bench") / "tiny.sqlite"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "make_large.py"), "--scale", "0.002", str(big)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "'CUPTI_ACTIVITY_KIND_RUNTIME': 40000" in r.stdout and "'CUPTI_ACTIVITY_KIND_MEMCPY': 4000" in r.stdout
    return big


def test_generator_and_harness_smoke(tiny):
    big = tiny
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "harness.py"), "--reps", "1", "--no-stats", str(big)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    rows = [ln for ln in r.stdout.splitlines() if ln.startswith("tiny.sqlite")]
    names = " | ".join(rows)
    assert "read floor" in names and "nsysh2d analyze (cold)" in names and "nsysh2d analyze (warm, cached)" in names
    assert "nsysh2d analyze (warm, --format json)" in names
    assert "nsysh2d api-summary" in names
    assert all("exit" not in ln for ln in rows), r.stdout


def test_scaling_benchmark_smoke():
    """benchmarks/scaling.py on 4 reports: every engine gives the same JSON as the local pool."""
    import subprocess
    import sys

    from conftest import ROOT

    r = subprocess.run([sys.executable, str(ROOT / "benchmarks/scaling.py"), "--counts", "4"], capture_output=True,
                       text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [line for line in r.stdout.splitlines() if line.strip().startswith("4 ")]
    assert len(rows) >= 2 and all(line.rstrip().endswith(("yes", "-")) for line in rows)


@pytest.mark.parametrize("source", ["generated", "real"])
def test_cold_floor_smoke(request, source):
    """benchmarks/cold_floor.py on a tiny generated export and on a real H200 one: every part is timed, and
    the calls its streaming join counts are the (memcpy API call, activity row) pairs that plain SQL over
    the export finds."""
    import sqlite3

    big = ROOT / "tests" / "data" / "h200" / "qwen3vl-before.sqlite" if source == "real" else request.getfixturevalue("tiny")
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "cold_floor.py"), "--reps", "1", str(big)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    con = sqlite3.connect(f"file:{big}?mode=ro", uri=True)
    (want,) = con.execute("""
        SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r
        JOIN StringIds s ON s.id = r.nameId AND s.value GLOB 'cu*Memcpy*'
        JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = r.correlationId
         AND (m.globalPid IS NULL OR m.globalPid = (r.globalTid / 16777216) * 16777216)""").fetchone()
    assert want > 0 and f": {want} copy call/activity pairs joined;" in r.stdout, r.stdout
    for part in ("copy calls' runtime rows", "memcpy activity", "NVTX ranges", "calls joined", "nsysh2d analyze, cold",
                 "api-summary: runtime rows read", "api-summary: read, counted"):
        assert part in r.stdout, r.stdout
    assert "floor: the parts' CPU" in r.stdout
