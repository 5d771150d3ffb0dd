"""The compiled per-call pass against the SQL steps on whole files (slow: every bundled real export and the sweep
traces through both paths, generated nsys-shaped files, a fresh process): the same report and the same calls
either way, the copies it makes equal to plain SQL over the file (sqlite3). tests/test_percall.py has the fast
cases (edited copies, errors, the C entry points)."""
import json
import os
import sqlite3
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings

from conftest import DATA, SWEEP_TRACES
from nsysh2d.analysis import Analysis, Options
from nsysh2d.errors import BadInput
from test_percall import API_PROBE, analyse, assert_same

REAL = sorted({*SWEEP_TRACES.values(), *DATA.glob("h200/*.sqlite"), *DATA.glob("h100/*.sqlite"),
               *DATA.glob("thirdparty/*.sqlite")})


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_every_bundled_export_gives_the_same_report_either_way(path, monkeypatch):
    joined = assert_same(path, monkeypatch)
    # Which exports fold (several runtime rows per call with --cudabacktrace, batched copies) is a property of
    # the file: those the SQL steps join; the rest must have been joined in C.
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        folds = sql_says_folds(con)
    finally:
        con.close()
    assert joined == (not folds), (path.name, joined, folds)


def sql_says_folds(con) -> bool:
    """Plain SQL: some copy call (not a host allocation) has no activity row or several, or some activity row of a
    call's key repeats (what makes model/copies_fold.sql run)."""
    names = ("(SELECT id FROM StringIds WHERE value GLOB 'cu*Memcpy*')")
    if not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'CUPTI_ACTIVITY_KIND_MEMCPY'").fetchone():
        return bool(con.execute(f"SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE nameId IN {names} "
                                "AND correlationId IS NOT NULL").fetchone()[0])
    dup = con.execute("SELECT count(*) FROM (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE correlationId "
                      "IS NOT NULL GROUP BY correlationId HAVING count(*) > 1)").fetchone()[0]
    per_call = con.execute(
        f"SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.nameId IN {names} AND r.correlationId IS NOT NULL "
        "AND (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY m WHERE m.correlationId = r.correlationId AND "
        "(m.globalPid IS NULL OR m.globalPid = (r.globalTid / 16777216) * 16777216)) != 1").fetchone()[0]
    claims = con.execute(
        f"SELECT count(*) FROM (SELECT m.rowid FROM CUPTI_ACTIVITY_KIND_MEMCPY m JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
        f"ON r.correlationId = m.correlationId AND (m.globalPid IS NULL OR m.globalPid = (r.globalTid / 16777216) * "
        f"16777216) WHERE r.nameId IN {names} GROUP BY m.rowid HAVING count(*) > 1)").fetchone()[0]
    return bool(dup or per_call or claims)


def test_the_copies_it_makes_are_plain_sql_over_the_file(monkeypatch):
    """Every copy of a real export as sqlite3 joins it (call, activity row, innermost enclosing NVTX push/pop or
    start/end range of the call's thread), against the compiled pass's table `copies`."""
    path = SWEEP_TRACES["2025.3"]
    monkeypatch.setenv("NSYSH2D_PERCALL", "1")
    a = Analysis.open(str(path))
    try:
        a.report(Options(min_ns=0, direction="all", top=5))
        assert a.trace.con.execute("SELECT getvariable('api_rows')").fetchone()[0] > 0
        got = a.trace.con.execute(
            "SELECT c.correlation_id, c.api_start, c.api_end, c.gpu_start, c.gpu_end, c.bytes, c.copy_kind, "
            "c.stream_id, r.name FROM copies c LEFT JOIN nvtx_tree r ON r.id = c.nvtx_id ORDER BY ALL").fetchall()
    finally:
        a.close()
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        want = con.execute(
            "SELECT r.correlationId, r.start, r.end, m.start, m.end, m.bytes, m.copyKind, m.streamId, "
            # innermost: the latest-starting range of the thread that encloses the call (ties: the shorter)
            " (SELECT COALESCE(n.text, s.value) FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
            "  WHERE n.globalTid = r.globalTid AND n.eventType IN (59, 60) AND n.start <= r.start AND n.end >= r.end "
            "  ORDER BY n.start DESC, n.end ASC LIMIT 1) "
            "FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
            "JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = r.correlationId "
            "WHERE s.value GLOB 'cu*Memcpy*' ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9").fetchall()
    finally:
        con.close()
    assert len(got) == len(want) > 100
    assert sorted(got, key=repr) == sorted(want, key=repr)
    assert any(row[-1] is not None for row in want)


def test_property_files_give_the_same_report_either_way(tmp_path_factory, monkeypatch):
    """The generated nsys-shaped files of test_properties.py (NULLs, shared ids, missing tables) through both
    paths, in process: the same report, or the same one-line error."""
    from test_properties import build, trace

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(t=trace())
    def check(t):
        path = tmp_path_factory.mktemp("prop") / "t.sqlite"
        build(str(path), t)
        out = []
        for mode in ("0", "1"):
            try:
                out.append(analyse(path, monkeypatch, mode))
            except BadInput as e:
                out.append(str(e))
        # (where the pass found calls to fold, both runs are the SQL path: folding picks the same activity row in
        # each, copies_fold.sql's `pick`, so the reports are equal there too)
        assert (out[0] if isinstance(out[0], str) else out[0][:2]) == (
            out[1] if isinstance(out[1], str) else out[1][:2])

    check()


def test_a_report_with_the_pass_is_the_same_through_the_cli(tmp_path):
    """End to end in a fresh process, as a user runs it (the pass forced on a bundled export)."""
    outs = []
    for mode in ("0", "1"):
        r = subprocess.run([sys.executable, "-m", "nsysh2d.cli", "analyze", str(API_PROBE), "--no-cache",
                            "--format", "json"], capture_output=True, text=True,
                           env={**os.environ, "NSYSH2D_PERCALL": mode})
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    assert outs[0] == outs[1] and json.loads(outs[0])["reports"][0]["totals"]["long_calls"] >= 0
