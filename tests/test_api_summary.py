"""`nsysh2d api-summary` (issue 21's per-API summary): the figures of `nsys stats -r cuda_api_sum`, checked
against plain SQL over real exports of both schema versions and, where .ci/run installed it, against the real
nsys CLI's own report on the same file."""
import csv
import io
import json
import os
import shutil
import sqlite3
import statistics
import subprocess

import pytest

from conftest import H200, SHARED, run_cli

FILES = [H200 / "qwen3vl-before.sqlite", H200 / "api-probe.sqlite", SHARED / "h200-sweep-nsys2023.4.sqlite"]


def plain_sql(path, time_limit=None):
    """Per nameId, straight from SQLite: every row is a call; the time figures over the rows with both times
    (a time beyond +-time_limit counts as missing: schema.TIME_LIMIT, 2^62 - 1)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT nameId, start, end FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchall()
    finally:
        con.close()
    per = {}
    for nid, start, end in rows:
        ok = time_limit is None or (abs(start) <= time_limit and abs(end) <= time_limit)
        per.setdefault(nid, []).append(end - start if ok else None)
    out = {}
    for nid, all_ns in per.items():
        v = [ns for ns in all_ns if ns is not None]
        out[nid] = {"calls": len(all_ns), "total_ns": sum(v) if v else None, "min_ns": min(v, default=None),
                    "max_ns": max(v, default=None), "median_ns": round(statistics.median(v), 1) if v else None,
                    "avg_ns": round(statistics.fmean(v), 1) if v else None,
                    "stddev_ns": statistics.stdev(v) if len(v) > 1 else None}
    return out


def assert_matches(rows, ref):
    keys = ("calls", "total_ns", "min_ns", "max_ns", "median_ns", "avg_ns")
    assert {x["name_id"]: {k: x[k] for k in keys} for x in rows} == {n: {k: r[k] for k in keys} for n, r in ref.items()}
    for x in rows:   # rounded to 0.1 ns: the float sums may differ in the last place
        want = ref[x["name_id"]]["stddev_ns"]
        assert (x["stddev_ns"] is None) == (want is None) and (want is None or abs(x["stddev_ns"] - want) <= 0.051)


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_api_summary_equals_plain_sql(path):
    r = run_cli("api-summary", str(path), "--format", "json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["api_summary"][0]["rows"]
    assert_matches(rows, plain_sql(path))
    assert [x["total_ns"] for x in rows] == sorted((x["total_ns"] for x in rows), reverse=True)
    assert sum(x["time_pct"] for x in rows) == pytest.approx(100, abs=0.1 * len(rows))


def test_api_summary_rows_that_do_not_pack(tmp_path):
    """Calls whose nameId and duration do not fit one packed integer (an out-of-range end, a 20-minute call, a huge
    string id, an end before the start, a start within 2^40 ns of the time limit) are read apart and still counted
    exactly: a real export edited so."""
    path = tmp_path / "edited.sqlite"
    shutil.copy(H200 / "api-probe.sqlite", path)
    con = sqlite3.connect(path)
    try:
        ids = [r[0] for r in con.execute("SELECT rowid FROM CUPTI_ACTIVITY_KIND_RUNTIME ORDER BY rowid LIMIT 8")]
        # nsys declares the times NOT NULL; a time of +-2^62 ns or more is read as missing (schema.TIME_LIMIT)
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET end = ? WHERE rowid = ?", (2 ** 62 + 5, ids[0]))
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET end = start + 1200000000000 WHERE rowid = ?", (ids[1],))
        con.execute("INSERT INTO StringIds (id, value) VALUES (9000000, 'cudaHugeId')")
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = 9000000 WHERE rowid IN (?, ?)", (ids[2], ids[3]))
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET end = start - 5 WHERE rowid = ?", (ids[4],))
        # Starts within 2^40 ns of the limit do not pack (the end is checked through the start): a valid call
        # there is still counted, one whose end passes the limit is not.
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = ?, end = ? WHERE rowid = ?",
                    (2 ** 62 - 100, 2 ** 62 - 50, ids[5]))
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = ?, end = ? WHERE rowid = ?",
                    (2 ** 62 - 10, 2 ** 62 + 10, ids[6]))
        # exactly at the limits: end - start would overflow INT64; both times count as missing
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = ?, end = ? WHERE rowid = ?",
                    (-2 ** 62, 2 ** 62, ids[7]))
        con.commit()
    finally:
        con.close()
    r = run_cli("api-summary", str(path), "--format", "json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["api_summary"][0]["rows"]
    ref = plain_sql(path, time_limit=2 ** 62 - 1)
    assert_matches(rows, ref)
    assert sum(x["calls"] for x in rows) == sum(r["calls"] for r in ref.values())
    assert any(x["name"] == "cudaHugeId" and x["calls"] == 2 for x in rows)
    assert max(x["max_ns"] or 0 for x in rows) >= 1200000000000 and min(x["min_ns"] or 0 for x in rows) == -5


def test_api_summary_matches_nsys_stats():
    nsys = os.environ.get("NSYS")
    if not nsys:
        if os.environ.get("CI"):
            pytest.fail("CI has no nsys CLI: .ci/run installs one")
        pytest.skip("no nsys CLI on this machine (.ci/run installs one)")
    path = SHARED / "h200-sweep-nsys2023.4.sqlite"
    out = subprocess.run([nsys, "stats", "-q", "-r", "cuda_api_sum", "-f", "csv", "-o", "-", str(path)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    text = out.stdout[out.stdout.index('"Time (%)"'):] if '"Time (%)"' in out.stdout else out.stdout
    theirs = sorted((r["Name"], int(r["Num Calls"]), int(r["Total Time (ns)"]), int(r["Min (ns)"]), int(r["Max (ns)"]))
                    for r in csv.DictReader(io.StringIO(text)))
    mine = json.loads(run_cli("api-summary", str(path), "--format", "json").stdout)["api_summary"][0]["rows"]
    assert sorted((r["name"], r["calls"], r["total_ns"], r["min_ns"], r["max_ns"]) for r in mine) == theirs


def test_api_summary_bad_input(tmp_path):
    bad = tmp_path / "x.sqlite"
    bad.write_text("not sqlite")
    r = run_cli("api-summary", str(bad))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stdout == ""


def test_api_summary_text_in_an_integer_column(tmp_path):
    """A damaged export with text where nsys writes an integer time: one line naming the table and the column,
    exit 2, nothing on stdout, the file untouched."""
    path = tmp_path / "text.sqlite"
    shutil.copy(H200 / "api-probe.sqlite", path)
    con = sqlite3.connect(path)
    try:
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = 'abc' "
                    "WHERE rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_RUNTIME)")
        con.commit()
    finally:
        con.close()
    before = path.read_bytes()
    r = run_cli("api-summary", str(path))
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    assert 'table CUPTI_ACTIVITY_KIND_RUNTIME column "start" holds a text value' in r.stderr
    assert path.read_bytes() == before
