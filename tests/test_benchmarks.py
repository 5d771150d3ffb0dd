"""Smoke run of the benchmark tools at a tiny size (timings are printed, never asserted)."""
import subprocess
import sys

from conftest import ROOT


def test_generator_and_harness_smoke(tmp_path):
    big = tmp_path / "tiny.sqlite"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "make_large.py"), "--scale", "0.002", str(big)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "'CUPTI_ACTIVITY_KIND_RUNTIME': 40000" in r.stdout and "'CUPTI_ACTIVITY_KIND_MEMCPY': 4000" in r.stdout
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
