"""Issue 42: what a newcomer and a CI pipeline meet (each test names the item it covers)."""
import json

from conftest import H200, SWEEP_TRACES, run_cli

PROBE = H200 / "api-probe.sqlite"


def test_a_baseline_without_backtraces_accepts_no_unknown_site(tmp_path):
    """Item: a baseline made from a trace without backtraces stored "(no backtrace)" as an accepted call
    site, so a later trace with new blocking copies passed no-new-sites. Both traces here have no
    backtraces: the gate matches them by NVTX range, and the probe's ranges are new."""
    base = tmp_path / "b.json"
    made = run_cli("baseline", SWEEP_TRACES["2025.3"], "-o", base)
    assert made.returncode == 0 and "at 0 call site(s)" in made.stdout and "never accepted" in made.stdout
    r = run_cli("gate", PROBE, "--baseline", base, "--format", "json")
    doc = json.loads(r.stdout)
    rules = {x["name"]: x for x in doc["verdicts"][0]["rules"]}
    assert r.returncode == 1 and not rules["no-new-sites"]["passed"]
    assert "NVTX range" in rules["no-new-sites"]["message"]
    new = {o["site"] for o in rules["no-new-sites"]["offenders"]}
    assert new == {"drv-async-pageable", "torch-async-pageable"} and "(no backtrace)" not in new
    # the trace its baseline came from still passes against it
    own = tmp_path / "own.json"
    assert run_cli("baseline", PROBE, "-o", own).returncode == 0
    assert run_cli("gate", PROBE, "--baseline", own).returncode == 0


def _sync_long_by_sql(path):
    import sqlite3

    con = sqlite3.connect(path)
    try:
        return con.execute(
            "SELECT count(*), sum(r.end - r.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
            "JOIN StringIds s ON s.id = r.nameId JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = r.correlationId "
            "WHERE s.value GLOB 'cu*Memcpy*' AND s.value NOT GLOB '*Async*' AND m.copyKind = 1 "
            "AND r.end - r.start >= 100000").fetchone()
    finally:
        con.close()


def test_sync_copies_left_out_are_named_in_the_verdict_and_the_combined_table():
    """Item: the gate passed a trace with 164 pageable cudaMemcpy calls without a word, and the multi-report
    table showed it as 0/0. Left out by --calls async, they are now named, with plain SQL's count and time."""
    from nsysh2d.units import format_ns

    n, ns = _sync_long_by_sql(PROBE)
    assert n == 12
    r = run_cli("gate", PROBE, "--format", "json")
    msg = {x["name"]: x["message"] for x in json.loads(r.stdout)["verdicts"][0]["rules"]}["max-long-calls"]
    assert f"not judged: {n} long sync copy calls ({ns / 1e6:.2f} ms; --calls all judges them)" in msg
    table = run_cli("analyze", PROBE, SWEEP_TRACES["2025.3"], env={"COLUMNS": "200"}).stdout
    combined = table[table.index("\ncombined\n"):]
    row = next(ln for ln in combined.splitlines() if ln.strip().startswith(str(PROBE)))
    assert row.split()[6:9] == [str(n), *format_ns(ns).split()]   # long, not counted | their time
    assert "not counted: long copy calls of the other API kind" in combined
