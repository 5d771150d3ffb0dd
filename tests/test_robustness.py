"""Odd but answerable inputs (answer + a warning that counts the rows), odd environments, concurrency."""
import json
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from conftest import H200, SWEEP_TRACES, listing, run_cli, sha256

REAL = SWEEP_TRACES["2025.3"]


def copy_db(tmp_path, name="t.sqlite"):
    p = tmp_path / name
    shutil.copyfile(REAL, p)
    return p


def edit(path, *sql):
    con = sqlite3.connect(path)
    for s in sql:
        con.execute(s)
    con.commit()
    con.close()


def analyze_json(cli, path, *args):
    r = cli("analyze", path, "--format", "json", "--direction", "all", *args)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["reports"][0]


MEMCPY_CALLS = ("SELECT r.rowid FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
                "WHERE s.value LIKE 'cudaMemcpyAsync%'")


def test_null_durations_are_counted_and_left_out(cli, tmp_path):
    p = copy_db(tmp_path)
    # nsys declares end NOT NULL; a file damaged elsewhere need not keep that promise.
    edit(p, "CREATE TABLE r2 AS SELECT * FROM CUPTI_ACTIVITY_KIND_RUNTIME", "DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME",
         "ALTER TABLE r2 RENAME TO CUPTI_ACTIVITY_KIND_RUNTIME",
         f"UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET end = NULL WHERE rowid IN ({MEMCPY_CALLS} LIMIT 5)")
    rep = analyze_json(cli, p)
    assert rep["totals"]["calls"] == 251
    assert "5 copy calls with a NULL, negative or impossible (2^62 ns or more) host start/end (left out)" in rep["warnings"]


def test_negative_durations_are_counted_and_left_out(cli, tmp_path):
    p = copy_db(tmp_path)
    edit(p, f"UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET end = start - 10 WHERE rowid IN ({MEMCPY_CALLS} LIMIT 3)")
    rep = analyze_json(cli, p)
    assert rep["totals"]["calls"] == 253
    assert any(w.startswith("3 copy calls with a NULL, negative or impossible") for w in rep["warnings"])


def test_times_at_the_limit_do_not_overflow(cli, tmp_path):
    """A step range and copy calls from exactly -2^62 to 2^62 ns (a damaged real export): end - start of two such
    times overflowed INT64 (exit 2 'damaged'); such times are read as missing, the calls and the range left out
    with a warning each, and every figure agrees with plain SQL over the times that are kept."""
    p = tmp_path / "edge.sqlite"
    shutil.copyfile(H200 / "qwen3vl-before.sqlite", p)
    lo, hi = -2 ** 62, 2 ** 62
    con = sqlite3.connect(p)
    (step,) = con.execute("SELECT min(rowid) FROM NVTX_EVENTS WHERE text LIKE 'step %' AND end IS NOT NULL").fetchone()
    # the calls' CUDA runtime rows (eventClass 0): a Python-backtrace row beside one shares its correlationId
    calls = [r for (r,) in con.execute(f"{MEMCPY_CALLS} AND r.eventClass = 0 ORDER BY r.rowid LIMIT 2")]
    con.execute("UPDATE NVTX_EVENTS SET start = ?, end = ? WHERE rowid = ?", (lo, hi, step))
    con.execute(f"UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = ?, end = ? WHERE rowid IN ({calls[0]}, {calls[1]})",
                (lo, hi))
    con.commit()
    want_steps = con.execute("SELECT count(*), sum(end - start) FROM NVTX_EVENTS WHERE text LIKE 'step %' AND "
                             "end >= start AND abs(start) < ? AND abs(end) < ?", (hi, hi)).fetchone()
    con.close()
    rep = analyze_json(cli, p)
    assert (rep["steps"]["steps"], rep["steps"]["step_ns"]) == want_steps and want_steps[0] > 0
    assert "2 copy calls with a NULL, negative or impossible (2^62 ns or more) host start/end (left out)" \
        in rep["warnings"]
    assert "1 NVTX ranges with an impossible start/end (2^62 ns or more, or ending before they start; left out)" \
        in rep["warnings"]


def test_kind_ids_missing_from_enum(cli, tmp_path):
    p = copy_db(tmp_path)
    edit(p, "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET srcKind = 42 WHERE rowid IN "
            "(SELECT rowid FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE srcKind = 0 LIMIT 7)")
    rep = analyze_json(cli, p)
    kinds = {k["src_kind"]: k["calls"] for k in rep["by_kind"]}
    assert kinds == {"Pageable": 89, "kind 42": 7, "Pinned": 160}
    assert any(w.startswith("7 copy calls whose memory or copy kind cannot be decoded (ids CUPTI does not define")
               for w in rep["warnings"]), rep["warnings"]
    assert rep["totals"]["unclassified_calls"] == 7


def test_duplicated_activity_rows_count_once(cli, tmp_path):
    p = copy_db(tmp_path)
    edit(p, "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY SELECT * FROM CUPTI_ACTIVITY_KIND_MEMCPY LIMIT 10")
    rep = analyze_json(cli, p)
    assert rep["totals"]["calls"] == 256
    assert "10 memcpy activity rows duplicated exactly (counted once)" in rep["warnings"]


def test_api_calls_without_activity_are_counted(cli, tmp_path):
    p = copy_db(tmp_path)
    edit(p, "DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE rowid IN (SELECT rowid FROM CUPTI_ACTIVITY_KIND_MEMCPY LIMIT 4)")
    rep = analyze_json(cli, p)
    assert rep["totals"]["calls"] == 252
    assert "4 memcpy API calls with no memcpy activity row (not counted)" in rep["warnings"]


def test_newer_schema_with_extra_tables_and_columns(cli, tmp_path):
    p = copy_db(tmp_path)
    edit(p, "CREATE TABLE CUPTI_ACTIVITY_KIND_FUTURE (a, b)",
         "ALTER TABLE CUPTI_ACTIVITY_KIND_RUNTIME ADD COLUMN futureColumn INTEGER DEFAULT 7",
         "ALTER TABLE CUPTI_ACTIVITY_KIND_MEMCPY ADD COLUMN anotherNew TEXT",
         "UPDATE META_DATA_EXPORT SET value = '9.1.0' WHERE name = 'EXPORT_SCHEMA_VERSION'")
    rep = analyze_json(cli, p)
    assert rep["schema_version"] == "9.1.0" and rep["totals"]["calls"] == 256 and rep["warnings"] == []


def test_unicode_and_spaces_in_path(cli, tmp_path):
    d = tmp_path / "répertoire avec espaces ✓"
    d.mkdir()
    p = copy_db(d, "trace ü 1.sqlite")
    assert analyze_json(cli, p)["totals"]["calls"] == 256
    r = run_cli("gate", p, "--max-long-calls", "999", env={"NSYSH2D_CACHE_DIR": str(tmp_path / "c")})
    assert r.returncode == 0, r.stderr


def test_huge_single_row(cli, tmp_path):
    # A 16 MB NVTX range name around every copy: answered, the name cut at 1024 characters and counted.
    p = copy_db(tmp_path)
    big = "x" * (16 * 1024 * 1024)
    con = sqlite3.connect(p)
    lo, hi, tid = con.execute("SELECT min(start), max(end), min(globalTid) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()
    con.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?, ?, 59, ?, ?)",
                (lo - 1, hi + 1, big, tid))
    con.commit()
    con.close()
    rep = analyze_json(cli, p, "--top", "1", "--min-duration", "1ns")
    assert rep["top"][0]["nvtx_path"] == "x" * 1023 + "…"
    assert "1 NVTX range names longer than 1024 characters (cut)" in rep["warnings"]


def test_file_locked_by_a_writer(tmp_path):
    p = copy_db(tmp_path)
    writer = sqlite3.connect(p, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")
    writer.execute("UPDATE META_DATA_EXPORT SET value = value")
    try:
        r = run_cli("analyze", p, env={"NSYSH2D_CACHE_DIR": str(tmp_path / "c")})
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert r.returncode == 2, r.stdout + r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "locked" in r.stderr and "Traceback" not in r.stderr


def test_write_through_a_symlink_and_output_is_atomic(cli, tmp_path):
    out = tmp_path / "report.json"
    r = cli("analyze", REAL, "--format", "json", "-o", out)
    assert r.exit_code == 0 and json.loads(out.read_text())["reports"][0]["totals"]["calls"] == 256
    assert listing(tmp_path) == sorted(["cache", "report.json"])  # no temporary left behind
    r = cli("analyze", REAL, "-o", tmp_path / "missing-dir" / "x" / "r.txt")
    assert r.exit_code == 0  # parents are created
    blocker = tmp_path / "f"
    blocker.write_text("")
    r = cli("analyze", REAL, "-o", blocker / "r.txt")
    assert r.exit_code == 6 and "cannot write" in r.stderr


def test_eight_processes_same_file_same_output(tmp_path):
    p = copy_db(tmp_path)
    before = sha256(p)
    env = {**os.environ, "NSYSH2D_CACHE_DIR": str(tmp_path / "shared-cache")}
    cmd = [sys.executable, "-m", "nsysh2d.cli", "analyze", str(p), "--format", "json", "--by", "site"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for _ in range(8)]
    outs = [pr.communicate(timeout=300) for pr in procs]
    assert all(pr.returncode == 0 for pr in procs), [o[1] for o in outs]
    assert len({o[0] for o in outs}) == 1
    # And once more from the cache the 8 filled: identical again.
    again = subprocess.run(cmd, capture_output=True, env=env)
    assert again.stdout == outs[0][0]
    assert sha256(p) == before and listing(tmp_path) == ["shared-cache", "t.sqlite"]
    assert list((tmp_path / "shared-cache" / "reports").glob("*.json"))
    assert not list((tmp_path / "shared-cache" / "reports").glob("*.tmp"))


def test_cache_is_never_stale(cli, tmp_path):
    p = copy_db(tmp_path)
    assert analyze_json(cli, p)["totals"]["calls"] == 256
    edit(p, "DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE rowid IN (SELECT rowid FROM CUPTI_ACTIVITY_KIND_MEMCPY LIMIT 6)")
    assert analyze_json(cli, p)["totals"]["calls"] == 250
    r = cli("cache-clear")
    assert r.exit_code == 0 and "removed" in r.stdout


def test_parallel_reports_keep_input_order(cli, tmp_path):
    paths = [SWEEP_TRACES[k] for k in ("2023.4", "2025.3", "2025.3-cudabacktrace")]
    r = cli("analyze", *paths, "--format", "json", "-j", "2")
    assert r.exit_code == 0
    assert [rep["path"] for rep in json.loads(r.stdout)["reports"]] == [str(p) for p in paths]


@pytest.mark.parametrize("key", ["2025.3", "2025.3-cudabacktrace"])
def test_parallel_read_splits_lose_no_row(monkeypatch, key):
    # ingest.py reads the runtime table in rowid ranges, one per thread, and analysis.py joins and
    # compresses each part on its own: boundaries must lose or repeat no row. With --cudabacktrace a
    # call has several runtime rows, which a boundary can split (at 7 parts it splits 2 of them;
    # copies_fold.sql joins them again).
    from nsysh2d.source import ingest
    from nsysh2d.analysis import Analysis, Options

    def report(parts):
        monkeypatch.setattr(ingest, "MIN_ROWS_PER_PART", 1)
        monkeypatch.setattr(ingest, "_workers", lambda threads: parts)
        a = Analysis.open(str(SWEEP_TRACES[key]))
        try:
            return a.report(Options(direction="all", top=50))
        finally:
            a.close()

    one = report(1)
    assert one["totals"]["calls"] == 256
    for parts in (2, 3, 7):
        assert report(parts) == one


def test_loop_joins_are_off():
    # Arrow parts give DuckDB's planner no row counts; with its default thresholds it turned the
    # NVTX ASOF join into a quadratic nested loop (17 s on 100 k calls). trace.py sets them to 0.
    from nsysh2d.source.trace import Trace

    with Trace.open(str(REAL)) as t:
        got = t.con.execute("SELECT current_setting('asof_loop_join_threshold'), "
                            "current_setting('nested_loop_join_threshold')").fetchone()
    assert [int(v) for v in got] == [0, 0]


def test_unsigned_extensions_stay_refused_after_open():
    """trace.py skips the signature check for the one LOAD of the pinned sqlite scanner (a 45 ms hash);
    the connection it hands out (a library user's `.trace.con`) refuses unsigned extensions again."""
    import duckdb

    from nsysh2d.source.trace import Trace

    with Trace.open(str(REAL)) as t:
        assert t.con.execute("SELECT current_setting('allow_unsigned_extensions')").fetchone()[0] is False
        with pytest.raises(duckdb.Error):
            t.con.execute("SET allow_unsigned_extensions = true")


def test_text_in_an_integer_column(cli, tmp_path):
    p = copy_db(tmp_path)
    edit(p, f"UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = 'garbage' WHERE rowid IN ({MEMCPY_CALLS} LIMIT 1)")
    r = cli("analyze", p)
    assert r.exit_code == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "CUPTI_ACTIVITY_KIND_RUNTIME" in r.stderr, r.stderr
