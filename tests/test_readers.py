"""The two read paths of an nsys export's big tables (source/ingest.py): a small table is read by DuckDB through the
attached file's sqlite_query, one statement and no Arrow; a larger one by ADBC in parallel rowid parts. Both run the
same statement inside SQLite, so every bundled real export gives the same report, call for call, either way; bad
integers are the same one-line error; and a small report imports no pyarrow at all (its ~0.15 s, issue 38)."""
import json
import subprocess
import sys

import pytest

from conftest import DATA, SWEEP_TRACES, edited_copy
from nsysh2d.analysis import Analysis, Options
from nsysh2d.errors import BadInput
from nsysh2d.source import ingest

REAL = sorted({*SWEEP_TRACES.values(), *DATA.glob("h200/*.sqlite"), *DATA.glob("h100/*.sqlite"),
               *DATA.glob("thirdparty/*.sqlite")})


def report_and_calls(path) -> tuple[dict, list[tuple]]:
    a = Analysis.open(str(path))
    try:
        rep = a.report(Options(min_ns=0, direction="all", top=50))
        cur = a.trace.con.execute("SELECT * FROM copies_x ORDER BY ALL")
        cols = [d[0] for d in cur.description]
        return rep, [dict(zip(cols, row)) for row in cur.fetchall()]
    finally:
        a.close()


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_both_read_paths_give_the_same_report(path, monkeypatch):
    small = report_and_calls(path)
    monkeypatch.setattr(ingest, "SMALL_ROWS", -1)   # every table through ADBC, in parts
    parallel = report_and_calls(path)
    diffs = [(i, k, v, b.get(k)) for i, (a, b) in enumerate(zip(small[1], parallel[1])) for k, v in a.items() if b.get(k) != v]
    assert not diffs and len(small[1]) == len(parallel[1]) > 0, diffs[:5]
    assert json.dumps(small[0], sort_keys=True, default=str) == json.dumps(parallel[0], sort_keys=True, default=str)


@pytest.mark.parametrize("small_rows", [ingest.SMALL_ROWS, -1], ids=["small", "parallel"])
def test_text_in_an_integer_column_is_one_error_on_both_paths(tmp_path, monkeypatch, small_rows):
    monkeypatch.setattr(ingest, "SMALL_ROWS", small_rows)
    bad = edited_copy(DATA / "h200" / "api-probe.sqlite", tmp_path / "bad.sqlite",
                      "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId = 'x' || correlationId "
                      "WHERE rowid = (SELECT max(r.rowid) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s "
                      "ON s.id = r.nameId WHERE s.value GLOB 'cudaMemcpy*')")
    with pytest.raises(BadInput) as e:
        report_and_calls(bad)
    assert "CUPTI_ACTIVITY_KIND_RUNTIME holds non-integer values" in str(e.value) and "\n" not in str(e.value)


def test_a_small_report_imports_no_arrow():
    code = ("import sys; from nsysh2d.cli import main\n"
            "try:\n    main(['analyze', sys.argv[1], '--no-cache', '--format', 'json'])\n"
            "except SystemExit as e:\n    assert e.code == 0, e.code\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyarrow', 'adbc_driver_manager', 'polars')),"
            " file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", code, str(DATA / "h200" / "qwen3vl-before.sqlite")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["reports"][0]["totals"]["long_calls"] > 0
    assert r.stderr.strip().splitlines()[-1] == "[]"


def test_frames_are_the_same_table_either_way(monkeypatch):
    """Trace.frame: rows computed in Python reach DuckDB as JSON text when few, through Arrow when many; the table
    is the same either way, names from a trace (quotes, commas, line breaks, NUL, non-ASCII) and NULLs included."""
    from nsysh2d.source import trace as trace_mod

    rows = [(1, 'a,"b"\n::error::x', -7), (None, None, None), (2 ** 62, "é\x00\u202e", 2 ** 31 - 1), (-2 ** 63 + 1, "", 0)]
    got = []
    for limit in (trace_mod.FRAME_ROWS, -1):
        monkeypatch.setattr(trace_mod, "FRAME_ROWS", limit)
        t = trace_mod.Trace.open(str(DATA / "h200" / "api-probe.sqlite"))
        try:
            t.frame("x_frame", ["a", "b", "c"], ["int64", "string", "int32"], rows)
            t.frame("empty_frame", ["a"], ["string"], [])
            got.append((t.con.execute("SELECT * FROM x_frame").fetchall(),
                        [r[:2] for r in t.con.execute("DESCRIBE x_frame").fetchall()],
                        t.con.execute("SELECT count(*) FROM empty_frame").fetchone()))
        finally:
            t.close()
    assert got[0] == got[1] and got[0][0] == rows and got[0][1] == [("a", "BIGINT"), ("b", "VARCHAR"), ("c", "INTEGER")]
