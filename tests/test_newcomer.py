"""Issue 42: what a newcomer and a CI pipeline meet (each test names the item it covers)."""
import json
import os
from pathlib import Path

import pytest

from conftest import H200, SWEEP_TRACES, run_cli

PROBE = H200 / "api-probe.sqlite"


def test_a_baseline_without_backtraces_accepts_no_unknown_site(tmp_path):
    """Item: a baseline made from a trace without backtraces stored "(no backtrace)" as an accepted call
    site, so a later trace with new blocking copies passed no-new-sites. Both traces here have no
    backtraces: the gate matches them by NVTX range, and the probe's ranges are new."""
    base = tmp_path / "b.json"
    made = run_cli("baseline", SWEEP_TRACES["2025.3"], "-o", base)
    assert made.returncode == 0 and "at 0 call sites" in made.stdout and "never accepted" in made.stdout
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


@pytest.mark.slow
def test_a_plain_install_makes_html_pages_and_check_says_it_needs_torch(tmp_path):
    """Items: `--format html` after the README's install exited 2 asking for the [plot] extra; `nsysh2d
    check` without torch was an internal error (exit 70). A fresh venv with `pip install .` only."""
    import subprocess
    import sys

    from conftest import BEFORE, ROOT

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(ROOT)], capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr[-2000:]
    exe = str(venv / "bin" / "nsysh2d")
    page = tmp_path / "page.html"
    r = subprocess.run([exe, "analyze", str(BEFORE), "--format", "html", "-o", str(page)], capture_output=True,
                       text=True, env={**os.environ, "NSYSH2D_CACHE_DIR": str(tmp_path / "c")})
    assert r.returncode == 0, r.stderr
    assert page.read_text().count("<svg") >= 1
    script = tmp_path / "s.py"
    script.write_text("print('hello')\n")
    c = subprocess.run([exe, "check", str(script)], capture_output=True, text=True)
    assert c.returncode == 2 and c.stderr.startswith("nsysh2d: error: nsysh2d check needs PyTorch")
    assert len(c.stderr.splitlines()) == 1 and "hello" not in c.stdout


def test_json_asked_for_is_json_when_every_input_fails_and_compare_names_each_bad_file(tmp_path):
    """Items: `analyze bad.sqlite --format json` printed nothing on stdout when every input failed;
    `compare` named only the first bad file."""
    bad = tmp_path / "bad.sqlite"
    bad.write_text("not a trace")
    for cmd, key in ((["analyze"], "reports"), (["api-summary"], "api_summary")):
        r = run_cli(*cmd, bad, "--format", "json")
        doc = json.loads(r.stdout)
        assert r.returncode == 2 and doc[key] == [] and doc["errors"][0]["path"] == str(bad)
        assert doc["errors"][0]["exit_code"] == 2 and len(r.stderr.splitlines()) == 1
    c = run_cli("compare", bad, tmp_path / "missing.sqlite")
    assert c.returncode == 2 and len(c.stderr.splitlines()) == 1
    assert str(bad) in c.stderr and str(tmp_path / "missing.sqlite") in c.stderr


def test_narrow_tables_keep_call_sites_and_the_gate_says_each_fix_once(tmp_path):
    """Items: at 100 columns the call site was cut while the API column (always cudaMemcpyAsync) stayed;
    compare cut sites even at 160; gate text repeated the same fix on every offender and printed
    `at ? (NVTX -)` for an unknown site."""
    from conftest import AFTER, BEFORE, edited_copy

    doc = json.loads(run_cli("analyze", BEFORE, "--format", "json").stdout)["reports"][0]
    sites = {t["site_line"] for t in doc["top"]}
    table = run_cli("analyze", BEFORE, env={"COLUMNS": "100"}).stdout
    top = table[table.index("longest calls"):]
    assert all(s in top for s in sites) and "(API, " in top and "left out to fit 100 columns" in top
    cmp = run_cli("compare", BEFORE, AFTER, env={"COLUMNS": "160"}).stdout
    by_site = cmp[cmp.index("by call site"):cmp.index("by NVTX range")]
    assert all(r["group"] in by_site for r in doc["by_site"] if r["blocking_calls"])
    gate = run_cli("gate", BEFORE).stdout
    fixes = {t["fix"] for t in doc["top"] if t["waited_for_gpu"]}
    assert all(gate.count(f) == 1 for f in fixes) and len(fixes) == 2
    bare = edited_copy(PROBE, tmp_path / "bare.sqlite", "DELETE FROM NVTX_EVENTS")
    g = run_cli("gate", bare).stdout
    assert "at ?" not in g and "NVTX -" not in g and g.count("at (call site unknown)") == 8


def test_version_names_the_nsys_and_duckdb_in_use_and_help_teaches_completion_and_exit_codes(tmp_path):
    """Items: `--version` that says the nsys and DuckDB in use; shell completion; exit codes in --help."""
    import stat
    from importlib.metadata import version

    fake = tmp_path / "nsys"
    fake.write_text("#!/bin/sh\necho 'NVIDIA Nsight Systems version 2099.1.1'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    r = run_cli("--version", env={"NSYS": str(fake)})
    assert r.returncode == 0 and r.stdout.splitlines()[0].startswith("nsysh2d ")
    assert f"DuckDB {version('duckdb')}" in r.stdout and f"nsys: {fake} (NVIDIA Nsight Systems version 2099.1.1)" in r.stdout
    none = run_cli("--version", env={"PATH": "/nonexistent", "NSYS": ""})
    # without $NSYS or PATH: not found, or one of the usual install folders (/opt/nvidia/..., /opt/nsys here)
    assert none.returncode == 0 and ("nsys: not found (needed by profile" in none.stdout or "nsys: /opt/" in none.stdout)
    h = run_cli("--help").stdout
    assert "Exit codes: 0 ok, 1 gate failed, 2 bad input" in h and "_NSYSH2D_COMPLETE=bash_source" in h
    comp = run_cli(env={"_NSYSH2D_COMPLETE": "bash_source"})
    assert comp.returncode == 0 and "_nsysh2d_completion" in comp.stdout


def test_csv_of_a_trace_without_copies_is_loadable_and_keeps_every_report(tmp_path):
    """Items: `analyze X --format csv -o e.csv` on a trace with no copies wrote a 1-byte file that pandas and
    polars refuse; in a multi-input CSV, reports with no rows vanished."""
    import csv
    import io

    import polars as pl

    from conftest import THIRDPARTY

    empty = THIRDPARTY / "mordred__report1_old.sqlite"   # a public CUDA C export without async copies
    out = tmp_path / "e.csv"
    assert run_cli("analyze", empty, "--format", "csv", "-o", out).returncode == 0
    frame = pl.read_csv(out)
    assert frame.columns[0] == "path" and frame["path"].to_list() == [str(empty)]
    both = run_cli("analyze", PROBE, empty, "--format", "csv").stdout
    rows = list(csv.DictReader(io.StringIO(both)))
    assert {r["path"] for r in rows} == {str(PROBE), str(empty)}
    assert [r["path"] for r in rows].count(str(empty)) == 1 and rows[-1]["calls"] == ""


def test_csv_has_totals_and_per_call_tables(cli):
    """Issue 42: CSV held only the group table. --csv-table totals gives one row per report with the JSON's
    totals, --csv-table calls the longest calls with the JSON's top-list columns."""
    import csv
    import io

    from conftest import AFTER, BEFORE

    doc = json.loads(cli("analyze", BEFORE, AFTER, "--format", "json").output)["reports"]
    totals = list(csv.DictReader(io.StringIO(cli("analyze", BEFORE, AFTER, "--format", "csv", "--csv-table",
                                                 "totals").output)))
    assert [r["path"] for r in totals] == [d["path"] for d in doc]
    for row, d in zip(totals, doc):
        assert int(row["blocking_calls"]) == d["totals"]["blocking_calls"] and int(row["steps"]) == d["steps"]["steps"]
        assert int(row["long_ns"]) == d["totals"]["long_ns"]
    calls = list(csv.DictReader(io.StringIO(cli("analyze", BEFORE, "--format", "csv", "--csv-table", "calls",
                                                "--top", "5").output)))
    top = json.loads(cli("analyze", BEFORE, "--format", "json", "--top", "5").output)["reports"][0]["top"]
    assert [(int(r["host_ns"]), r["site"]) for r in calls] == [(t["host_ns"], t["site"]) for t in top]


def _fake_nsys_install(root):
    """The layout of Debian's nsys package, in small: the binary, python/packages/nsys_recipe without
    third_party, a host folder and a linked folder."""
    target = root / "target-linux-x64"
    (target / "python" / "packages" / "nsys_recipe" / "lib").mkdir(parents=True)
    (target / "python" / "packages" / "nsys_recipe" / "__init__.py").write_text("# nsys_recipe\n")
    (target / "python" / "packages" / "nsys_recipe" / "lib" / "nsys_path.py").write_text("# finds files\n")
    (root / "host-linux-x64").mkdir()
    (root / "host-linux-x64" / "libfoo.so").write_bytes(b"\x7fELF")
    os.symlink("host-linux-x64", root / "host")
    nsys = target / "nsys"
    nsys.write_text("#!/bin/sh\necho 'NVIDIA Nsight Systems version 2023.4.4.54-234433681190v0'\n")
    nsys.chmod(0o755)
    return nsys


def test_recipe_path_names_the_missing_runner_folder_and_builds_a_private_stand_in(tmp_path):
    """Issue 42: Debian's nsys lacks nsys_recipe/third_party, so `nsys recipe` stops; recipe-path says which
    folder and how to fix it, and --nsys-shadow gives an nsys that has it, without touching the install."""
    nsys = _fake_nsys_install(tmp_path / "install")
    before = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "install").rglob("*"))
    env = {"NSYSH2D_CACHE_DIR": str(tmp_path / "cache"), "NSYS": str(nsys)}
    r = run_cli("recipe-path", env=env)
    assert r.returncode == 0 and r.stdout.strip().endswith("recipe")
    gap = tmp_path / "install" / "target-linux-x64" / "python" / "packages" / "nsys_recipe" / "third_party"
    assert f"lacks {gap}" in r.stderr and "--nsys-shadow" in r.stderr and len(r.stderr.splitlines()) == 1
    assert run_cli("-q", "recipe-path", env=env).stderr == ""
    s1 = run_cli("recipe-path", "--nsys-shadow", env=env)
    s2 = run_cli("recipe-path", "--nsys-shadow", env=env)
    assert s1.returncode == 0 and s1.stdout == s2.stdout
    shadow = Path(s1.stdout.strip())
    assert shadow.is_file() and not shadow.is_symlink() and shadow.read_text() == nsys.read_text()
    assert os.access(shadow, os.X_OK) and shadow.is_relative_to(tmp_path / "cache")
    pkg = shadow.parent / "python" / "packages" / "nsys_recipe"
    assert (pkg / "third_party").is_dir() and (pkg / "lib" / "nsys_path.py").is_symlink()
    assert os.readlink(shadow.parent.parent / "host") == "host-linux-x64"
    assert (shadow.parent.parent / "host-linux-x64" / "libfoo.so").read_bytes() == b"\x7fELF"
    # the install itself is unchanged
    assert sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "install").rglob("*")) == before
    assert not gap.exists()
    # an install that has the folder: no note, and --nsys-shadow names the nsys itself
    gap.mkdir()
    r = run_cli("recipe-path", env=env)
    assert r.returncode == 0 and r.stderr == ""
    assert run_cli("recipe-path", "--nsys-shadow", env=env).stdout.strip() == str(nsys)
    # an nsys that is not there: --nsys-shadow cannot judge and says why, in one line
    r = run_cli("recipe-path", "--nsys-shadow", "--nsys", tmp_path / "none" / "nsys", env=env)
    assert r.returncode != 0 and "not an executable file" in r.stderr and "Traceback" not in r.stderr


def test_a_report_input_names_the_nsys_that_captured_it_and_the_one_that_exported_it(tmp_path, monkeypatch):
    """Issue 42: a .qdrep/.nsys-rep's export names only the exporting nsys (META_DATA_EXPORT); the capture's
    build is the report file's first line. A 2020.3 header (the layout of a real report's first line, as
    nsys 2023.4 writes it here: test_real_nsys) in front of a report whose export is already in the cache."""
    import sqlite3
    import shutil

    from nsysh2d.cache import file_key, seal

    cache = tmp_path / "cache"
    rep = tmp_path / "old.qdrep"
    rep.write_bytes(b"NVIDIA Tegra Profiler Report 2020@3@1@72-29016617v0.\n\x0bLocal (CLI)\x12\n" + b"\0" * 64)
    (cache / "exports").mkdir(parents=True)
    export = cache / "exports" / f"{file_key(str(rep))}.sqlite"
    shutil.copy(H200 / "qwen3vl-before.sqlite", export)
    monkeypatch.setenv("NSYSH2D_CACHE_DIR", str(cache))
    seal(export)
    exporter = sqlite3.connect(export).execute(
        "SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_PRODUCT_VERSION'").fetchone()[0]
    env = {"NSYSH2D_CACHE_DIR": str(cache)}
    doc = json.loads(run_cli("analyze", rep, "--format", "json", env=env).stdout)["reports"][0]
    assert doc["nsys_version"] == "2020.3.1.72" and doc["exported_with"] == exporter
    text = run_cli("analyze", rep, env=env).stdout
    assert f"(nsys 2020.3.1.72, exported with {exporter}, schema" in text
    # a header that names no build (an older layout): the capturing nsys is unknown, never shown as the exporter
    rep.write_bytes(b"QDREP some older header\n" + b"\0" * 64)
    seal(export)
    unknown = tmp_path / "cache" / "exports" / f"{file_key(str(rep))}.sqlite"
    if unknown != export:
        shutil.copy(export, unknown)
        seal(unknown)
    doc = json.loads(run_cli("analyze", rep, "--format", "json", env=env).stdout)["reports"][0]
    assert doc["nsys_version"] is None and doc["exported_with"] == exporter
    assert f"(nsys ?, exported with {exporter}, schema" in run_cli("analyze", rep, env=env).stdout
    # an export passed directly keeps the exporting version and no exported_with key (outputs as before)
    direct = json.loads(run_cli("analyze", H200 / "qwen3vl-before.sqlite", "--format", "json", env=env).stdout)
    assert direct["reports"][0]["nsys_version"] == exporter and "exported_with" not in direct["reports"][0]


def test_cheap_default_capture_finds_the_same_blocking_copies_as_the_sampled_one():
    """Issue 42: the default capture now samples no CPU (12 s and 2 MB raw against 120 s and 2.26 GB on
    qwen3vl, tests/data/h100/capture-cost.txt). Both H100 exports of the same workload give the same long
    pageable copies by plain SQL and the same blocking NVTX ranges in the report; only the sampled one tells the
    strided-pinned source apart (native stacks)."""
    import sqlite3

    h100 = H200.parent / "h100"
    found = {}
    for name in ("cost-none", "cost-default"):
        path = h100 / f"{name}.sqlite"
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        long_calls, long_pageable = con.execute("""
            SELECT count(*), count(*) FILTER (WHERE m.srcKind = 0)
            FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN CUPTI_ACTIVITY_KIND_MEMCPY m USING (correlationId)
            JOIN StringIds f ON f.id = r.nameId
            WHERE f.value LIKE 'cudaMemcpyAsync%' AND m.copyKind = 1 AND r."end" - r.start >= 100000
              AND r.eventClass = 0""").fetchone()
        doc = json.loads(run_cli("analyze", path, "--format", "json").stdout)["reports"][0]
        found[name] = (long_pageable, doc)
        assert doc["totals"]["long_calls"] == long_calls
        assert doc["totals"]["blocking_calls"] == long_pageable == 2
        assert {r["group"] for r in doc["by_nvtx"] if r["blocking_calls"]} == {"mrope_copy", "vision_pos_ids"}
    classes = {n: {r["group"] for r in d["by_class"] if r["blocking_calls"]} for n, (_c, d) in found.items()}
    assert classes == {"cost-none": {"pageable"}, "cost-default": {"pageable", "pinned_strided"}}
    # Without stacks the fix says what it cannot rule out (the M-RoPE copy is in fact strided-pinned); with them
    # the classes are told apart and the caveat is gone.
    fixes = {n: {t["fix"] for t in d["top"] if t["waited_for_gpu"]} for n, (_c, d) in found.items()}
    assert fixes["cost-none"] and all("classed by memory kind alone" in f and "strided view of pinned memory" in f
                                      for f in fixes["cost-none"])
    assert not any("classed by memory kind alone" in f for f in fixes["cost-default"])


def test_quiet_and_source_root_do_not_outlive_their_command(cli, tmp_path, monkeypatch):
    """-q and --source-root work through the environment (subprocesses inherit them); an in-process caller's next
    command (the API, a test suite) must not stay quiet or keep the other folder (a leak made later tests flaky)."""
    import os

    monkeypatch.delenv("NSYSH2D_QUIET", raising=False)
    monkeypatch.delenv("NSYSH2D_SOURCE_ROOT", raising=False)
    for args in (["-q", "analyze"], ["analyze", "-q"], ["analyze", "--source-root", str(tmp_path)]):
        r = cli(*args, H200 / "api-probe.sqlite", "--no-cache")
        assert r.exit_code == 0, r.output
        assert "NSYSH2D_QUIET" not in os.environ and "NSYSH2D_SOURCE_ROOT" not in os.environ, args
