"""`nsysh2d api-summary` (issue 21's per-API summary): the figures of `nsys stats -r cuda_api_sum`, checked
against plain SQL over real exports of both schema versions and, where .ci/run installed it, against the real
nsys CLI's own report on the same file."""
import csv
import io
import json
import os
import sqlite3
import statistics
import subprocess

import pytest

from conftest import H200, SHARED, run_cli

FILES = [H200 / "qwen3vl-before.sqlite", H200 / "api-probe.sqlite", SHARED / "h200-sweep-nsys2023.4.sqlite"]


def plain_sql(path):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT nameId, end - start FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchall()
    finally:
        con.close()
    per = {}
    for nid, ns in rows:
        per.setdefault(nid, []).append(ns)
    return {nid: {"calls": len(v), "total_ns": sum(v), "min_ns": min(v), "max_ns": max(v),
                  "median_ns": round(statistics.median(v), 1)} for nid, v in per.items()}


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_api_summary_equals_plain_sql(path):
    r = run_cli("api-summary", str(path), "--format", "json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["api_summary"][0]["rows"]
    ref = plain_sql(path)
    assert {x["name_id"]: {k: x[k] for k in ("calls", "total_ns", "min_ns", "max_ns", "median_ns")} for x in rows} == ref
    assert [x["total_ns"] for x in rows] == sorted((x["total_ns"] for x in rows), reverse=True)
    assert sum(x["time_pct"] for x in rows) == pytest.approx(100, abs=0.1 * len(rows))


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
