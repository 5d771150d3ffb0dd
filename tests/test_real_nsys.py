"""The real nsys CLI end to end (CI installs nsys 2023.4 with ../shared/tools/install-nsys-cli.sh and sets
$NSYS): `nsysh2d profile` of a CPU-only command (no CUDA call recorded: exit 4, files kept), then `analyze`
of the .nsys-rep it wrote. No GPU here, so the trace has no CUDA data and the answer is the documented
bad-input error naming --trace=cuda."""
import subprocess
import sys

import pytest

from conftest import listing, run_cli
from nsysh2d.capture import nsys as nsysmod


@pytest.fixture
def real_nsys():
    try:
        return nsysmod.find_nsys()
    except Exception:
        pytest.skip("no nsys CLI on this machine (.ci/run installs one)")


def test_profile_and_analyze_with_real_nsys(tmp_path, real_nsys):
    out = tmp_path / "out"
    env = {"NSYS": real_nsys, "NSYSH2D_CACHE_DIR": str(tmp_path / "cache")}
    r = run_cli("profile", "-o", out, "--name", "cpu", "--trace", "osrt", "--cudabacktrace", "none", "--sample", "none",
                "--", sys.executable, "-c", "print(sum(range(10**6)))", env=env)
    # It ran, but made no CUDA call: not a success (exit 4), and what was written is kept and named.
    assert r.returncode == 4, r.stdout + r.stderr
    assert "made no CUDA API call" in r.stderr and "cpu.sqlite" in r.stderr and "'osrt'" in r.stderr
    assert (out / "cpu.nsys-rep").stat().st_size > 0 and (out / "cpu.sqlite").stat().st_size > 0
    assert "499999500000" in r.stderr + r.stdout  # the workload ran under nsys
    # The report's first line names the build that captured it, the one `nsys --version` prints.
    from nsysh2d.source.export import report_build

    version = subprocess.run([real_nsys, "--version"], capture_output=True, text=True).stdout
    assert report_build(str(out / "cpu.nsys-rep")) and report_build(str(out / "cpu.nsys-rep")) in version
    # The report path: exported with the same nsys into the cache folder, never beside the report.
    files = listing(out)
    r = run_cli("analyze", out / "cpu.nsys-rep", env=env)
    assert r.returncode == 2 and "no CUDA API trace" in r.stderr and "--trace=cuda" in r.stderr
    assert listing(out) == files
    exports = list((tmp_path / "cache" / "exports").glob("*.sqlite"))
    assert exports
    # Only the tables the analyses read were exported (nsys export --tables; issue 38), while the
    # profile's own export beside the report has them all.
    import sqlite3

    from nsysh2d.source.schema import VIEWS

    wanted = {t for tables, _o, _c in VIEWS.values() for t in ([tables] if isinstance(tables, str) else tables)}
    def tables(p):
        con = sqlite3.connect(p)
        try:
            return {n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            con.close()
    assert "StringIds" in tables(exports[0]) <= wanted
    assert len(tables(out / "cpu.sqlite")) > len(tables(exports[0]))
    # A workload that fails under real nsys: exit 4 and the partial capture named.
    r = run_cli("profile", "-o", out, "--name", "bad", "--trace", "osrt", "--cudabacktrace", "none",
                "--sample", "none", "--", sys.executable, "-c", "import sys; sys.exit(7)", env=env)
    assert r.returncode == 4 and "exited" in r.stderr
