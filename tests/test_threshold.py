"""`nsysh2d threshold` on the committed H200 sweep capture."""
import json

from conftest import SWEEP


def series(doc):
    return {(t["variant"], t["backlog_us"], t["inflight"]): t for t in doc["thresholds"]}


def test_threshold_on_h200_sweep(cli, tmp_path):
    plot = tmp_path / "t.png"
    r = cli("threshold", SWEEP, "--format", "json", "--plot", plot)
    assert r.exit_code == 0, r.output
    s = series(json.loads(r.stdout))
    for variant in ("pageable", "numpy_from", "pinned_strided"):
        one = s[(variant, 10000, 1)]
        # One copy in flight behind 10 ms of queued work: returns at 2 MiB, waits from 3 MiB on.
        assert (one["below_bytes"], one["threshold_bytes"]) == (2 * 1024 ** 2, 3 * 1024 ** 2)
        assert one["spread_bytes"][0] <= one["threshold_bytes"] <= one["spread_bytes"][1]
        assert 0.9 < one["blocked_over_backlog"] < 1.5
        # More copies in flight: the threshold per copy falls.
        assert s[(variant, 10000, 2)]["threshold_bytes"] < one["threshold_bytes"]
        assert s[(variant, 10000, 4)]["threshold_bytes"] < s[(variant, 10000, 2)]["threshold_bytes"]
        assert s[(variant, 0, 1)]["undetermined"]
    for variant in ("pinned_contig", "pinned_rows", "numpy_pin"):
        for (v, backlog, _k), t in s.items():
            if v == variant and backlog:
                assert t["threshold_bytes"] is None and not t["undetermined"], (v, backlog)
    assert plot.stat().st_size > 10_000 and plot.read_bytes()[:4] == b"\x89PNG"


def test_threshold_table(cli):
    r = cli("threshold", SWEEP)
    assert r.exit_code == 0
    assert "payload threshold per series" in r.stdout and "3.0 MiB" in r.stdout and "never waits" in r.stdout


def test_threshold_needs_a_sweep(cli):
    from conftest import BEFORE

    r = cli("threshold", BEFORE)
    assert r.exit_code == 2 and "h2d_sweep.py" in r.stderr


def test_threshold_is_a_job_like_the_others_cached_and_folder_refused(tmp_path):
    """Issue 36: threshold runs through jobs.py (cache, error handling) as analyze and api-summary do: the
    second run is served from the cache without opening the trace, with the same output."""
    from conftest import run_cli

    env = {"NSYSH2D_CACHE_DIR": str(tmp_path / "cache"), "NSYSH2D_TIMING": "1"}
    first = run_cli("threshold", SWEEP, "--format", "json", env=env)
    second = run_cli("threshold", SWEEP, "--format", "json", env=env)
    assert first.returncode == second.returncode == 0 and first.stdout == second.stdout
    assert "DuckDB memory limit" in first.stderr and "DuckDB memory limit" not in second.stderr
    assert len(list((tmp_path / "cache" / "reports").glob("*.json"))) == 1
    r = run_cli("threshold", tmp_path, env=env)
    assert r.returncode == 2 and "directory" in r.stderr.lower() and "Traceback" not in r.stderr
