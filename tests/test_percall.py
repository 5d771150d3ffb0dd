"""The compiled per-call pass (source/percall.py, _percall.c) against the SQL steps it stands in for (model/
store_calls.sql, copies_join.sql with nvtx.sql's with_nvtx), fast cases: edited copies of a real
export (calls that fold fall back to the SQL steps; odd values stay in C) give the same report either way; bad
values are the one-line error; the pass runs only when asked; its C entry points check what they are given
and attribute NVTX ranges by the ASOF rule; many Arrow parts from the compiled reader (as on a large export) give
the same report. tests/test_percall_exports.py: every bundled export, property files."""
import json
import os
import subprocess
import sys

import pytest

from conftest import DATA, edited_copy, fast_first
from nsysh2d.analysis import Analysis, Options
from nsysh2d.source import percall

API_PROBE = DATA / "h200" / "api-probe.sqlite"


def test_the_compiled_pass_is_built():
    assert percall.compiled() is not None, "nsysh2d.source._percall was not built: see setup.py"


def analyse(path, monkeypatch, mode: str) -> tuple[str, list[tuple], bool, list]:
    """(the report as JSON text, every call of copies_x, whether the C pass joined, the rows of copies and
    memcpy_raw) with NSYSH2D_PERCALL=mode."""
    monkeypatch.setenv("NSYSH2D_PERCALL", mode)
    a = Analysis.open(str(path))
    try:
        rep = a.report(Options(min_ns=0, direction="all", top=50))
        calls = a.trace.con.execute("SELECT * FROM copies_x ORDER BY ALL").fetchall()
        joined = a.trace.con.execute("SELECT getvariable('api_rows') IS NOT NULL").fetchone()[0]
        stored = [a.trace.con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in ("copies", "memcpy_raw")]
        return json.dumps(rep, sort_keys=True, default=str), calls, joined, stored
    finally:
        a.close()


def assert_same(path, monkeypatch) -> bool:
    sql = analyse(path, monkeypatch, "0")
    c = analyse(path, monkeypatch, "1")
    assert not sql[2], "the SQL-only path set api_rows"
    assert c[1] == sql[1], f"{path.name}: calls differ"
    assert c[0] == sql[0], f"{path.name}: reports differ"
    return c[2]


# Edited copies of a real export: each makes the calls fold (the SQL steps join) or stays plain, the same report.
EDITS = {
    "activity key repeated": ["INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY SELECT * FROM CUPTI_ACTIVITY_KIND_MEMCPY "
                              "WHERE rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_MEMCPY)"],
    "a call without activity": ["DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE rowid = "
                                "(SELECT max(rowid) FROM CUPTI_ACTIVITY_KIND_MEMCPY)"],
    "activity of another process": ["UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET globalPid = globalPid + 16777216 "
                                    "WHERE rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_MEMCPY)"],
    "activity naming no process": ["UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET globalPid = NULL"],
    "a call's runtime row twice": ["INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT * FROM CUPTI_ACTIVITY_KIND_RUNTIME "
                                   "WHERE correlationId = (SELECT min(correlationId) FROM CUPTI_ACTIVITY_KIND_MEMCPY)"],
    "NULL and huge times": ["UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = -9223372036854775807 WHERE rowid % 7 = 0",
                            "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET end = 9223372036854775807 WHERE rowid % 11 = 0",
                            "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET end = 4611686018427387904 WHERE rowid % 5 = 0"],
    "no NVTX": ["DROP TABLE IF EXISTS NVTX_EVENTS"],
    "no activity table": ["DROP TABLE CUPTI_ACTIVITY_KIND_MEMCPY"],
    "negative thread ids": ["UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET globalTid = -globalTid",
                            "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET globalPid = -globalPid"],
}


@pytest.mark.parametrize("edit", fast_first(list(EDITS)), ids=list(EDITS))
def test_edited_exports_give_the_same_report_either_way(edit, tmp_path, monkeypatch):
    path = edited_copy(API_PROBE, tmp_path / "edited.sqlite", *EDITS[edit])
    assert_same(path, monkeypatch)


EDIT_TEXT = {
    "CUPTI_ACTIVITY_KIND_MEMCPY": "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = 'x' WHERE rowid = "
                                  "(SELECT max(rowid) FROM CUPTI_ACTIVITY_KIND_MEMCPY)",
    "CUPTI_ACTIVITY_KIND_RUNTIME": "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = 'x' || start WHERE rowid = "
                                   "(SELECT max(r.rowid) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s "
                                   "ON s.id = r.nameId WHERE s.value GLOB 'cudaMemcpy*')",
}


@pytest.mark.parametrize("table", EDIT_TEXT)
def test_text_in_a_table_is_the_same_one_line_error(tmp_path, table):
    """Through the CLI as a user meets it (a copy call's row or an activity row): exit 2 and the same line either
    way."""
    bad = edited_copy(API_PROBE, tmp_path / "bad.sqlite", EDIT_TEXT[table])
    got = []
    for mode in ("0", "1"):
        r = subprocess.run([sys.executable, "-m", "nsysh2d.cli", "analyze", str(bad), "--no-cache", "--format", "json"],
                           capture_output=True, text=True, env={**os.environ, "NSYSH2D_PERCALL": mode})
        got.append((r.returncode, r.stderr))
    assert got[0] == got[1]
    assert got[1][0] == 2 and got[1][1].count("\n") == 1 and table in got[1][1], got[1]


def test_the_pass_runs_only_when_asked(monkeypatch):
    """Off by default (no faster on 2 cores, more memory: percall.wanted); NSYSH2D_PERCALL=1 asks for it, and
    NSYSH2D_READER=adbc (no compiled reader) still turns it off."""
    from nsysh2d.source.trace import Trace

    with Trace.open(str(API_PROBE), use_cache=False) as t:
        for value, want in ((None, False), ("0", False), ("1", True)):
            if value is None:
                monkeypatch.delenv("NSYSH2D_PERCALL", raising=False)
            else:
                monkeypatch.setenv("NSYSH2D_PERCALL", value)
            assert (percall.wanted(t) is not None) == want, value
        monkeypatch.setenv("NSYSH2D_READER", "adbc")
        assert percall.wanted(t) is None


# ---------------------------------------------------------------- the C entry points on their own
def test_match_calls_is_the_join_and_checks_its_buffers():
    """A call gets the activity row of its correlation id when that row names its process (global_pid_of its
    thread id) or none; repeated keys are counted; buffers of the wrong length are refused."""
    import numpy as np

    from nsysh2d.source import _percall

    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    ok = lambda *v: np.array(v, np.uint8)  # noqa: E731
    index, dups = _percall.build_index(i64(5, 7, 5, 9, 0), ok(1, 1, 1, 1, 0))
    assert dups == 1
    pid, pid_ok = i64(1 << 24, 2 << 24, 0, 0, 0), ok(1, 1, 1, 0, 1)
    # calls: key 5 of process 1 (row 0), key 7 of process 1 (row 1 is process 2: none), key 9 (row 3 names no
    # process), key 0 (its row's key is NULL: none), a NULL key, a NULL thread against a row naming a process
    corr, corr_ok = i64(5, 7, 9, 0, 5, 5), ok(1, 1, 1, 1, 0, 1)
    tid, tid_ok = i64((1 << 24) + 3, (1 << 24) + 3, 77, 1, 1, 0), ok(1, 1, 1, 1, 1, 0)
    got = np.frombuffer(_percall.match_calls(index, pid, pid_ok, corr, corr_ok, tid, tid_ok), np.int64)
    assert list(got) == [0, -1, 3, -1, -1, -1]
    with pytest.raises(ValueError):
        _percall.build_index(i64(5), ok(1, 1))
    with pytest.raises(ValueError):
        _percall.match_calls(index[:-8], pid, pid_ok, corr, corr_ok, tid, tid_ok)
    with pytest.raises(ValueError):
        _percall.match_calls(index, pid, pid_ok[:2], corr, corr_ok, tid, tid_ok)
    with pytest.raises(ValueError):
        _percall.match_calls(index, pid, pid_ok, corr, corr_ok, tid, tid_ok[:1])


def test_nvtx_attrib_is_the_asof_rule():
    """A call gets the range open after its thread's latest event at or before its start, if that range lasts
    until the call ends; unsorted events are refused."""
    import numpy as np

    from nsysh2d.source import _percall

    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    ok = lambda *v: np.array(v, np.uint8)  # noqa: E731
    # thread 1: range 10 open over [0, 100] (event at 0), closed at 100 (event: no range open)
    ev = (i64(1, 1), i64(0, 100), i64(10, 0), ok(1, 0), i64(100, 0), ok(1, 0), i64(3, 0), ok(1, 0))
    calls = (i64(1, 1, 1, 2, 1), ok(1, 1, 1, 1, 0), i64(0, 50, 100, 50, 5), ok(1, 1, 1, 1, 1),
             i64(100, 101, 120, 60, 6), ok(1, 1, 1, 1, 1))
    rid, rid_ok, rg = _percall.nvtx_attrib(*calls, *ev)
    assert list(np.frombuffer(rid_ok, np.uint8)) == [1, 0, 0, 0, 0]
    assert np.frombuffer(rid, np.int64)[0] == 10 and list(np.frombuffer(rg, np.int64)) == [3, 0, 0, 0, 0]
    bad = (i64(1, 1), i64(100, 0)) + ev[2:]
    with pytest.raises(ValueError):
        _percall.nvtx_attrib(*calls, *bad)




@pytest.mark.parametrize("edit", [None, "a call's runtime row twice"])
def test_many_parts_from_the_compiled_reader_give_the_same_report(edit, tmp_path, monkeypatch):
    """As on a large export: the calls come in many Arrow parts from the compiled reader (not the small path's one
    DuckDB relation), so a call and its key's other rows can fall in different parts."""
    from nsysh2d.source import ingest

    monkeypatch.setattr(ingest, "SMALL_ROWS", -1)
    monkeypatch.setattr(ingest, "MIN_ROWS_PER_PART", 1)
    monkeypatch.setattr(ingest, "_workers", lambda threads: 7)
    path = edited_copy(API_PROBE, tmp_path / "e.sqlite", *EDITS[edit]) if edit else API_PROBE
    assert assert_same(path, monkeypatch) == (edit is None)
