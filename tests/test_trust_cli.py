"""Promises of issues 14 and 19 kept through the real CLI: outputs never overwrite inputs, units and
settings are validated with one line and exit 2."""
import os
import shutil

import pytest

from conftest import SWEEP_TRACES, run_cli, sha256

REAL = SWEEP_TRACES["2025.3"]


@pytest.mark.parametrize("args", [
    ["analyze", "{t}", "-o", "{t}"], ["baseline", "{t}", "-o", "{t}"], ["baseline", "{t}", "-o", "{link}"],
    ["compare", "{t}", "{t}", "-o", "{t}"], ["gate", "{t}", "--junit", "{t}"], ["gate", "{t}", "--summary", "{link}"],
    ["threshold", "{t}", "-o", "{t}"]])
def test_output_that_is_an_input_is_refused(tmp_path, args):
    t = tmp_path / "t.sqlite"
    shutil.copy(REAL, t)
    (tmp_path / "link.json").symlink_to(t)
    before = sha256(t)
    r = run_cli(*[a.format(t=t, link=tmp_path / "link.json") for a in args])
    assert r.returncode == 2 and "refusing to overwrite it" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert sha256(t) == before and sorted(os.listdir(tmp_path)) == ["link.json", "t.sqlite"]


@pytest.mark.parametrize("args,message", [
    (["analyze", REAL, "--min-duration", "100"], "give its unit"),
    (["gate", REAL, "--max-blocked-per-step", "5"], "give its unit"),
    (["gate", REAL, "--baseline", REAL, "--tolerance", "10"], "1000%"),
    (["gate", REAL, "--tolerance", "-10%"], "0% or more"),
    (["gate", REAL, "--tolerance", "nan"], "0% or more"),
    (["gate", REAL, "--kind", "pagable"], "unknown memory kind"),
])
def test_bad_values_are_one_line_and_exit_2(args, message):
    r = run_cli(*args)
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_spaced_units_work_as_written(cli):
    a = cli("analyze", REAL, "--min-duration", "1 ms", "--format", "json")
    b = cli("analyze", REAL, "--min-duration", "1ms", "--format", "json")
    assert a.exit_code == b.exit_code == 0 and a.output == b.output and '"min_duration_ns": 1000000' in a.output


@pytest.mark.parametrize("value", ["-5", "1.9", "true"])
def test_pyproject_max_long_calls_is_validated(tmp_path, value):
    (tmp_path / "pyproject.toml").write_text(f"[tool.nsysh2d.gate]\nmax-long-calls = {value}\n")
    r = run_cli("gate", REAL, "--config", tmp_path / "pyproject.toml")
    assert r.returncode == 2 and "max-long-calls" in r.stderr and str(tmp_path) in r.stderr


def test_cache_clear_removes_only_what_nsysh2d_wrote(tmp_path):
    cache = tmp_path / "cache"
    env = {"NSYSH2D_CACHE_DIR": str(cache)}
    assert run_cli("analyze", REAL, env=env).returncode == 0
    (cache / "my-notes.txt").write_text("keep me")
    r = run_cli("cache-clear", env=env)
    assert r.returncode == 0 and "removed 1 cached file(s)" in r.stdout
    assert sorted(os.listdir(cache)) == ["my-notes.txt"]
    # A folder nsysh2d never wrote (no marker): nothing is deleted.
    stranger = tmp_path / "home"
    stranger.mkdir()
    (stranger / "thesis.tex").write_text("precious")
    r = run_cli("cache-clear", env={"NSYSH2D_CACHE_DIR": str(stranger)})
    assert r.returncode == 2 and "not an nsysh2d cache folder" in r.stderr
    assert (stranger / "thesis.tex").read_text() == "precious"


@pytest.mark.parametrize("option", ["--baseline", "--config", None])
def test_a_fifo_is_refused_not_waited_on(tmp_path, option):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    args = ["gate", REAL, option, fifo] if option else ["analyze", fifo]
    r = run_cli(*args)   # would block forever if the FIFO were opened
    assert r.returncode == 2 and "not a regular file" in r.stderr and str(fifo) in r.stderr


def test_nsys_rep_results_name_the_users_file(tmp_path, monkeypatch):
    """A .nsys-rep is exported into the cache; results and errors still name the .nsys-rep (issue 13.5).
    The export is put where nsysh2d keeps it, so no nsys CLI is needed here."""
    from nsysh2d.cache import file_key, seal

    cache = tmp_path / "cache"
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(b"not read: its export is already in the cache")
    (cache / "exports").mkdir(parents=True)
    shutil.copy(REAL, cache / "exports" / f"{file_key(str(rep))}.sqlite")
    monkeypatch.setenv("NSYSH2D_CACHE_DIR", str(cache))   # seal() uses this cache's key
    seal(cache / "exports" / f"{file_key(str(rep))}.sqlite")   # as nsysh2d does after its own export
    env = {"NSYSH2D_CACHE_DIR": str(cache)}
    r = run_cli("analyze", rep, "--format", "json", env=env)
    assert r.returncode == 0 and f'"path": "{rep}"' in r.stdout
    g = run_cli("gate", rep, env=env)
    assert g.returncode == 1 and f"FAIL  {rep}" in g.stdout
    # An export changed after nsysh2d sealed it is not read: the report is exported again (which this
    # fake report cannot be), and the error names the user's file.
    (cache / "exports" / f"{file_key(str(rep))}.sqlite").write_bytes(b"garbage" * 100)
    bad = run_cli("analyze", rep, "--nsys", "/bin/false", env=env)
    assert bad.returncode != 0 and "(exported to" not in bad.stderr and str(rep) in bad.stderr
    assert len(bad.stderr.splitlines()) == 1


def test_report_too_new_for_this_nsys_names_the_binary_and_what_to_do(tmp_path):
    """nsys refuses a report written by a newer version; the message names that nsys and its version.
    A stand-in nsys prints what such a refusal looks like (the real 2023.4 CLI has no newer report here)."""
    fake = tmp_path / "nsys"
    fake.write_text("#!/bin/sh\n"
                    "if [ \"$1\" = --version ]; then echo 'NVIDIA Nsight Systems version 2023.4.4.54-234433681190v0'; "
                    "exit 0; fi\n"
                    "echo 'Report was created in Nsight Systems version (2025.3), newer than this version' >&2; exit 1\n")
    fake.chmod(0o755)
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(b"x" * 64)
    r = run_cli("analyze", rep, "--nsys", fake, env={"NSYSH2D_CACHE_DIR": str(tmp_path / "cache")})
    assert r.returncode == 5, r.stderr
    line = r.stderr.strip()
    assert len(line.splitlines()) == 1
    assert f"newer Nsight Systems than {fake} (version 2023.4.4.54)" in line
    assert "--nsys" in line and "nsys export --type sqlite" in line and "newer than this version" in line


def test_gate_with_one_bad_input_still_reports_the_others(tmp_path):
    import json
    import xml.etree.ElementTree as ET

    good = "tests/data/h200/qwen3vl-after.sqlite"
    r = run_cli("gate", good, tmp_path / "nope.sqlite", "--format", "json", "--junit", tmp_path / "g.xml",
                cwd=str(SWEEP_TRACES["2025.3"].parents[3]))
    doc = json.loads(r.stdout)
    assert r.returncode == 2 and doc["passed"] is False
    assert [v["path"] for v in doc["verdicts"]] == [good] and doc["verdicts"][0]["passed"]
    assert doc["errors"][0]["exit_code"] == 2 and "no such file" in doc["errors"][0]["error"]
    suites = ET.parse(tmp_path / "g.xml").getroot()
    assert sum(int(s.get("errors")) for s in suites) == 1 and len(suites) == 2


def test_ctrl_c_inside_a_query_is_exit_130_and_writes_nothing(cli, tmp_path, monkeypatch):
    """DuckDB turns SIGINT into InterruptException ('Query interrupted'): that is Ctrl-C, not a bug."""
    import duckdb

    import nsysh2d.runner.run

    def interrupted(*a, **k):
        raise duckdb.InterruptException("INTERRUPT Error: Interrupted!")

    monkeypatch.setattr(nsysh2d.runner.run, "analyze_many", interrupted)
    out = tmp_path / "r.json"
    with pytest.raises(SystemExit) as e:
        from nsysh2d.cli import main
        main(["analyze", str(REAL), "-o", str(out)])
    assert e.value.code == 130 and not out.exists()


def test_newer_schema_columns_keep_working(cli, tmp_path):
    """Newer exports add columns (schema 3.24, nsys 2026.1: greenContextId, copyCount, ...). Made from a real
    2025.3 export by adding such columns: the answer must not change. (No real 3.24 export is bundled.)"""
    import json
    import sqlite3

    new = tmp_path / "new.sqlite"
    shutil.copy(REAL, new)
    con = sqlite3.connect(new)
    for table in ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_KERNEL"):
        cols = {r[1] for r in con.execute(f"PRAGMA table_info({table})")}
        for extra in ("greenContextId", "copyCount", "futureColumn"):
            if extra not in cols:
                con.execute(f"ALTER TABLE {table} ADD COLUMN {extra} INTEGER DEFAULT 7")
    con.execute("UPDATE META_DATA_EXPORT SET value = '3.24.0' WHERE name = 'EXPORT_SCHEMA_VERSION'")
    con.commit()
    con.close()
    a = json.loads(cli("analyze", REAL, "--format", "json").output)["reports"][0]
    b = json.loads(cli("analyze", new, "--format", "json").output)["reports"][0]
    assert b["schema_version"] == "3.24.0"
    assert {k: v for k, v in a.items() if k not in ("path", "schema_version")} == \
        {k: v for k, v in b.items() if k not in ("path", "schema_version")}


def long_copies_in_steps_sql(path, warmup, min_ns=100_000, outside_too=False):
    """Long H2D async copies made during step ranges past the warm-up (outside_too: all of them), by plain SQL over
    the export."""
    import re
    import sqlite3

    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        ranges = con.execute("SELECT n.start, n.end, n.globalTid >> 24, COALESCE(n.text, s.value) FROM NVTX_EVENTS n "
                             "LEFT JOIN StringIds s ON s.id = n.textId WHERE n.end IS NOT NULL").fetchall()
        steps = sorted((a, b, p) for a, b, p, name in ranges if name and re.search(r"^step\b", name))
        # One row per call: the CUDA runtime row (backtrace rows share its correlationId).
        calls = con.execute("SELECT DISTINCT r.correlationId, r.start, r.end, r.globalTid >> 24 "
                            "FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
                            "JOIN StringIds s ON s.id = r.nameId AND s.value GLOB 'cu*Memcpy*Async*' "
                            "JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = r.correlationId "
                            "AND m.copyKind = 1 WHERE r.eventClass = (SELECT id FROM ENUM_NSYS_EVENT_CLASS "
                            "WHERE label = 'CUDA runtime') AND r.end - r.start >= ?", (min_ns,)).fetchall()
    finally:
        con.close()
    return sum(1 for _c, a, b, p in calls if outside_too or any(i >= warmup and sa <= a and b <= sb and sp == p
                                                             for i, (sa, sb, sp) in enumerate(steps)))


@pytest.mark.parametrize("warmup", [0, 1, 5, 8])
def test_gate_judges_the_steady_state(warmup):
    """Issue 14: with step ranges the gate counts copies made during steps past the warm-up, and says so."""
    import json

    from conftest import BEFORE

    r = run_cli("gate", BEFORE, "--count", "long", "--warmup-steps", warmup, "--format", "json", "--no-cache")
    rule = json.loads(r.stdout)["verdicts"][0]["rules"][0]
    if warmup >= 8:   # no step left to judge: every copy of the run is (issue 54), not none
        n = long_copies_in_steps_sql(BEFORE, 0, outside_too=True)
        assert rule["message"].startswith(f"{n} long h2d copies") and "judged: every copy of the run" in rule["message"]
        assert "--warmup-steps 8 leaves none of the 8 step ranges" in rule["message"] and r.returncode == 1
        return
    n = long_copies_in_steps_sql(BEFORE, warmup)
    assert rule["message"].startswith(f"{n} long h2d copies") and "judged: copies during" in rule["message"]
    assert r.returncode == (1 if n else 0)


def test_enum_like_options_are_case_insensitive_and_checked():
    """issue 14: --format JSON, --by SITE, --direction H2D, --calls ALL, --count LONG, --kind pageable all mean
    what they say; unknown values are exit 2 naming the choices."""
    import json

    a = run_cli("analyze", REAL, "--format", "JSON", "--by", "SITE", "--direction", "H2D", "--calls", "ALL")
    b = run_cli("analyze", REAL, "--format", "json", "--by", "site", "--direction", "h2d", "--calls", "all")
    assert a.returncode == 0 and a.stdout == b.stdout and json.loads(a.stdout)["reports"][0]["calls"] == "all"
    g = run_cli("gate", REAL, "--count", "LONG", "--kind", "pageable", "--format", "Markdown")
    assert g.returncode == 1 and g.stdout.startswith("## nsysh2d gate")
    for args, words in ((["analyze", REAL, "--by", "sight"], "'kind', 'site'"),
                        (["gate", REAL, "--kind", "pagable"], "Pageable, Pinned"),
                        (["analyze", REAL, "--calls", "most"], "'async', 'sync', 'all'")):
        r = run_cli(*args)
        assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
