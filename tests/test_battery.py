"""A battery of damaged and odd inputs built at test time from a real export (issue 19). Each damaged case must
keep every promise: exit 2, one line on stderr naming the file and the problem, the input byte-identical,
nothing written beside it, nothing on stdout. Each odd-but-valid case must give the right answer against plain
SQL over the same file, with a warning that counts what was odd, and a gate that cannot pass where copies
cannot be judged."""
import json
import random
import re
import shutil
import sqlite3

import pytest

from conftest import cli_command, edited_copy, listing, run_cli, sha256, SWEEP_TRACES

REAL = SWEEP_TRACES["2025.3"]
MEMCPY_CALLS = ("SELECT r.rowid FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
                "WHERE s.value LIKE 'cudaMemcpyAsync%'")


def build(tmp_path, *sqls, name="t.sqlite"):
    folder = tmp_path / "in"
    folder.mkdir()
    return edited_copy(REAL, folder / name, *sqls)


def corrupt_pages(tmp_path, table):
    """Two leaf pages of `table` overwritten with random bytes (as a bad disk or an interrupted copy would)."""
    p = build(tmp_path)
    con = sqlite3.connect(p)
    size = con.execute("PRAGMA page_size").fetchone()[0]
    pages = [n for (n,) in con.execute("SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf'", (table,))]
    con.close()
    rnd = random.Random(table)
    with open(p, "r+b") as f:
        for n in pages[len(pages) // 2: len(pages) // 2 + 2]:
            f.seek((n - 1) * size)
            f.write(bytes(rnd.randrange(256) for _ in range(size)))
    return p


def untyped_memcpy(tmp_path):
    cols = [r[1] for r in sqlite3.connect(REAL).execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_MEMCPY)")]
    return build(tmp_path, "CREATE TABLE m2 AS SELECT * FROM CUPTI_ACTIVITY_KIND_MEMCPY",
                 "DROP TABLE CUPTI_ACTIVITY_KIND_MEMCPY",
                 f"CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY ({', '.join(cols)})",
                 "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY SELECT * FROM m2", "DROP TABLE m2")


DAMAGED = {
    "corrupt runtime pages": (lambda t: corrupt_pages(t, "CUPTI_ACTIVITY_KIND_RUNTIME"), "malformed"),
    "corrupt memcpy pages": (lambda t: corrupt_pages(t, "CUPTI_ACTIVITY_KIND_MEMCPY"), "malformed"),
    "corrupt StringIds pages": (lambda t: corrupt_pages(t, "StringIds"), "malformed"),
    "corrupt NVTX pages": (lambda t: corrupt_pages(t, "NVTX_EVENTS"), "malformed"),
    "corrupt kernel pages": (lambda t: corrupt_pages(t, "CUPTI_ACTIVITY_KIND_KERNEL"), "malformed"),
    "text in a memcpy integer column": (lambda t: build(
        t, "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = 'lots' WHERE rowid IN "
           "(SELECT rowid FROM CUPTI_ACTIVITY_KIND_MEMCPY LIMIT 2)"), "bytes"),
    "text in a runtime timestamp": (lambda t: build(
        t, f"UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = 'abc' WHERE rowid IN ({MEMCPY_CALLS} LIMIT 1)"),
        "CUPTI_ACTIVITY_KIND_RUNTIME"),
    "BLOB in NVTX text": (lambda t: build(
        t, "UPDATE NVTX_EVENTS SET text = X'00FF10' WHERE rowid IN "
           "(SELECT rowid FROM NVTX_EVENTS WHERE text IS NOT NULL LIMIT 3)"), "blob"),
    "invalid UTF-8 in NVTX text": (lambda t: build(
        t, "UPDATE NVTX_EVENTS SET text = CAST(X'66FF6F' AS TEXT) WHERE rowid IN "
           "(SELECT rowid FROM NVTX_EVENTS WHERE text IS NOT NULL LIMIT 3)"), "unicode"),
    "columns without declared types": (untyped_memcpy, "not typed as nsys writes them"),
    "runtime 'table' that is a view": (lambda t: build(
        t, "ALTER TABLE CUPTI_ACTIVITY_KIND_RUNTIME RENAME TO rt",
        "CREATE VIEW CUPTI_ACTIVITY_KIND_RUNTIME AS SELECT * FROM rt"), "is a view"),
}


@pytest.mark.parametrize("case", list(DAMAGED))
@pytest.mark.parametrize("command", ["analyze", "gate", "threshold", "compare"])
def test_damaged_input_keeps_every_promise(tmp_path, case, command):
    make, words = DAMAGED[case]
    p = make(tmp_path)
    before, files = sha256(p), listing(p.parent)
    args = {"analyze": [p], "gate": [p], "threshold": [p], "compare": [REAL, p]}[command]
    cache = [] if command == "threshold" else ["--no-cache"]
    r = run_cli(command, *args, "--format", "json", *cache, env={"NSYSH2D_CACHE_DIR": str(tmp_path / "cache")})
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert len(lines) == 1 and str(p) in lines[0] and words.lower() in lines[0].lower(), lines
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    if command == "gate":   # the document says what could not be judged, and that it did not pass
        doc = json.loads(r.stdout)
        assert doc["passed"] is False and doc["errors"][0]["path"] == str(p)
    elif command == "analyze":   # JSON asked for is JSON: no report, the error (issue 42)
        doc = json.loads(r.stdout)
        assert doc["reports"] == [] and doc["errors"][0]["path"] == str(p) and doc["errors"][0]["exit_code"] == 2
    else:
        assert r.stdout == ""
    assert sha256(p) == before and listing(p.parent) == files


def sql_h2d_calls(p, where=""):
    con = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
    n = con.execute(f"""
        SELECT count(DISTINCT r.correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME r
        JOIN (SELECT DISTINCT id, value FROM StringIds) s ON s.id = r.nameId AND s.value LIKE 'cudaMemcpyAsync%'
        JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = r.correlationId AND m.copyKind = 1
        WHERE r.eventClass = 0 {where}""").fetchone()[0]
    con.close()
    return n


def analyze(p):
    r = run_cli("analyze", p, "--no-cache", "--format", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["reports"][0]


def gate_rules(p):
    r = run_cli("gate", p, "--no-cache", "--format", "json")
    return r.returncode, {x["name"]: x for x in json.loads(r.stdout)["verdicts"][0]["rules"]}


@pytest.mark.parametrize("table,where", [("StringIds", "value LIKE 'cudaMemcpy%'"),
                                         ("ENUM_CUDA_MEM_KIND", "1"), ("ENUM_CUDA_MEMCPY_OPER", "1")])
def test_duplicated_ids_do_not_multiply_counts(tmp_path, table, where):
    (ddl,) = sqlite3.connect(REAL).execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    ddl = ddl.replace("PRIMARY KEY", "").replace("UNIQUE", "").replace("NOT NULL", "")   # let ids repeat
    p = build(tmp_path, f"CREATE TABLE x AS SELECT * FROM {table}", f"DROP TABLE {table}",
              ddl, f"INSERT INTO {table} SELECT * FROM x",
              f"INSERT INTO {table} SELECT * FROM x WHERE {where}", "DROP TABLE x")
    rep = analyze(p)
    assert rep["totals"]["calls"] == sql_h2d_calls(p) == sql_h2d_calls(REAL)
    assert any(w.endswith(f"duplicated ids in {table} (each id read once)") for w in rep["warnings"])


def test_overflowing_timestamps_are_left_out_and_counted(tmp_path):
    p = build(tmp_path, f"UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = -9000000000000000000, "
                        f"end = 9000000000000000000 WHERE rowid IN ({MEMCPY_CALLS} LIMIT 2)",
              "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 9000000000000000000 WHERE rowid IN "
              "(SELECT rowid FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 3)")
    rep = analyze(p)
    assert rep["totals"]["calls"] == sql_h2d_calls(p, "AND abs(r.end) < 4611686018427387904 "
                                                      "AND abs(r.start) < 4611686018427387904")
    assert "2 copy calls with a NULL, negative or impossible (2^62 ns or more) host start/end (left out)" \
        in rep["warnings"]


def test_unclaimed_activity_found_when_the_counts_balance(tmp_path):
    """pipeline.ALL_CLAIMED answers "every copy has its call" from counts when it can. Here the counts balance
    and still one copy has no call: activity rows without globalPid (older exports), one call deleted, and
    another call's row repeated in a second process, so that one copy matches two calls."""
    p = build(tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET globalPid = NULL",
              f"DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE rowid IN ({MEMCPY_CALLS} ORDER BY r.rowid LIMIT 1)",
              f"CREATE TABLE x AS SELECT * FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE rowid IN "
              f"({MEMCPY_CALLS} ORDER BY r.rowid DESC LIMIT 1)",
              "UPDATE x SET globalTid = globalTid + 16777216",
              "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT * FROM x", "DROP TABLE x")
    con = sqlite3.connect(p)
    unclaimed, activity = con.execute("""
        SELECT (SELECT count(DISTINCT m.correlationId) FROM CUPTI_ACTIVITY_KIND_MEMCPY m WHERE NOT EXISTS (
                    SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
                    WHERE r.correlationId = m.correlationId AND s.value GLOB 'cu*Memcpy*')),
               (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY)""").fetchone()
    calls = con.execute(f"SELECT count(*) FROM ({MEMCPY_CALLS})").fetchone()[0]
    con.close()
    assert unclaimed == 1 and calls == activity   # the case the counts alone would get wrong
    assert analyze(p)["totals"]["activity_without_call"] == 1


def test_api_names_missing_from_stringids_cannot_pass(tmp_path):
    p = build(tmp_path, "DELETE FROM StringIds WHERE value LIKE 'cudaMemcpy%'")
    rep = analyze(p)
    con = sqlite3.connect(p)
    orphans = con.execute("SELECT count(DISTINCT correlationId) FROM CUPTI_ACTIVITY_KIND_MEMCPY").fetchone()[0]
    con.close()
    assert rep["totals"]["calls"] == 0 and rep["totals"]["activity_without_call"] == orphans == 256
    code, rules = gate_rules(p)
    assert code == 1 and not rules["classified-copies"]["passed"]


def test_calls_sharing_a_correlation_id_are_said_and_fail_the_gate(tmp_path):
    p = build(tmp_path, f"UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId = (SELECT min(correlationId) FROM "
                        f"CUPTI_ACTIVITY_KIND_RUNTIME WHERE rowid IN ({MEMCPY_CALLS})) WHERE rowid IN "
                        f"({MEMCPY_CALLS} ORDER BY r.correlationId LIMIT 2)")
    rep = analyze(p)
    assert rep["totals"]["merged_calls"] == 1
    assert any("correlationIds shared by several memcpy API calls" in w for w in rep["warnings"])
    code, rules = gate_rules(p)
    assert code == 1 and "shared by several" in rules["classified-copies"]["message"]


def test_an_altered_cache_entry_is_not_served(tmp_path):
    cache = tmp_path / "cache"
    env = {"NSYSH2D_CACHE_DIR": str(cache)}
    first = run_cli("analyze", REAL, "--format", "json", env=env).stdout
    (entry,) = (cache / "reports").glob("*.json")
    stored = json.loads(entry.read_text())
    stored["report"]["totals"]["blocking_calls"] = 0            # someone edits the numbers
    entry.write_text(json.dumps(stored))
    assert run_cli("analyze", REAL, "--format", "json", env=env).stdout == first
    for junk in ("[]", "null", "{}", '{"sha256": 1}'):
        entry.write_text(junk)
        r = run_cli("analyze", REAL, "--format", "json", env=env)
        assert r.returncode == 0 and r.stdout == first, junk


@pytest.mark.parametrize("args,env,words", [
    (["analyze", REAL, "--top", "100000000000000000000"], {}, "--top"),
    (["analyze", REAL, "--step-pattern", "(?<=a)b", "--no-cache"], {}, "--step-pattern"),
    (["analyze", REAL, "--no-cache"], {"NSYSH2D_MEMORY_LIMIT": "lots"}, "NSYSH2D_MEMORY_LIMIT"),
])
def test_bad_settings_are_one_line_exit_2(args, env, words):
    r = run_cli(*args, env=env)
    assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.parametrize("text,words", [
    ("[tool.nsysh2d]\ngate = 5\n", "must be a table"),
    ('[tool.nsysh2d.gate]\ndirection = "sideways"\n', "direction = 'sideways'"),
    ("[tool.nsysh2d.gate]\nmax-long-calls = -5\n", "max-long-calls"),
    ("[tool.nsysh2d.gate]\nmax-long-calls = true\n", "max-long-calls"),
    ('[tool.nsysh2d.gate]\ntolerance = "nan"\n', "tolerance"),
])
def test_bad_pyproject_settings_name_the_file(tmp_path, text, words):
    conf = tmp_path / "pyproject.toml"
    conf.write_text(text)
    r = run_cli("gate", REAL, "--config", conf)
    assert r.returncode == 2 and str(conf) in r.stderr and words in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("doc", ['{"nsysh2d_baseline": 1, "by_site": 5, "min_duration_ns": 100000, "direction": "h2d"}',
                                 '{"nsysh2d_baseline": 1, "min_duration_ns": "x", "direction": "h2d"}',
                                 '{"nsysh2d_baseline": 1, "min_duration_ns": 100000, "direction": "h2d", '
                                 '"by_site": [{"group": "a", "blocking_calls": -1}]}', "[1, 2]"])
def test_baselines_of_the_wrong_shape_are_refused(tmp_path, doc):
    b = tmp_path / "b.json"
    b.write_text(doc)
    r = run_cli("gate", REAL, "--baseline", b)
    assert r.returncode == 2 and str(b) in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def killed_writer(tmp_path, journal_mode):
    """A copy of the export and a writer killed with SIGKILL mid-way: in WAL mode after committing a change (the
    -wal and -shm stay beside the file), in rollback mode inside a transaction (a hot -journal stays)."""
    import subprocess
    import sys

    p = build(tmp_path)
    script = f"""
import os, sqlite3, time
con = sqlite3.connect({str(p)!r}, isolation_level=None)
con.execute("PRAGMA journal_mode={journal_mode}")
con.execute("PRAGMA wal_autocheckpoint=0")
con.execute("BEGIN")
con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE rowid IN (SELECT rowid FROM CUPTI_ACTIVITY_KIND_MEMCPY LIMIT 6)")
{"con.execute('COMMIT')" if journal_mode == "WAL" else "pass"}
print("ready", flush=True)
time.sleep(60)
"""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    proc.kill()
    proc.wait()
    return p


@pytest.mark.parametrize("mode", ["WAL", "DELETE"])
def test_left_overs_of_a_killed_writer_are_read_from_a_private_copy(tmp_path, mode):
    p = killed_writer(tmp_path, mode)
    side = p.parent / (p.name + ("-wal" if mode == "WAL" else "-journal"))
    assert side.stat().st_size > 0
    before = {f: sha256(p.parent / f) for f in listing(p.parent)}
    r = run_cli("analyze", p, "--format", "json", "--no-cache", env={"NSYSH2D_CACHE_DIR": str(tmp_path / "cache")})
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)["reports"][0]
    # WAL: the committed delete counts (6 of 256 activity rows gone); rollback: the transaction never happened.
    assert rep["totals"]["calls"] == (250 if mode == "WAL" else 256)
    assert rep["path"] == str(p) and any("read from a private copy" in w for w in rep["warnings"])
    assert {f: sha256(p.parent / f) for f in listing(p.parent)} == before   # nothing written or changed there


def test_a_clean_wal_mode_export_leaves_nothing_beside_it(tmp_path):
    p = build(tmp_path, "PRAGMA journal_mode=WAL")
    files = listing(p.parent)
    assert files == ["t.sqlite"]
    r = run_cli("analyze", p, "--no-cache", env={"NSYSH2D_CACHE_DIR": str(tmp_path / "cache")})
    assert r.returncode == 0, r.stderr
    assert listing(p.parent) == files


def test_a_truncated_64k_page_export_is_said_to_be_truncated(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    big = folder / "big.sqlite"
    con = sqlite3.connect(REAL)
    con.execute("PRAGMA page_size = 65536")
    con.execute(f"VACUUM INTO '{big}'")
    con.close()
    assert sqlite3.connect(big).execute("PRAGMA page_size").fetchone()[0] == 65536
    data = big.read_bytes()
    big.write_bytes(data[: len(data) // 2])
    r = run_cli("analyze", big, "--no-cache")
    assert r.returncode == 2 and "truncated SQLite file" in r.stderr and f"of {len(data)} bytes" in r.stderr


def test_rowids_near_the_ends_of_int64_are_read_in_a_few_parts(tmp_path):
    p = build(tmp_path, f"UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET rowid = 9223372036854775806 WHERE rowid = "
                        f"(SELECT max(r.rowid) FROM ({MEMCPY_CALLS}) r)",
              f"UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET rowid = -9223372036854775807 WHERE rowid = "
              f"(SELECT min(r.rowid) FROM ({MEMCPY_CALLS}) r)")
    rep = analyze(p)
    assert rep["totals"]["calls"] == sql_h2d_calls(p) == 256


def run_with_file_size_limit(limit, *args, cwd=None):
    """The CLI with RLIMIT_FSIZE set: a write past `limit` bytes fails as on a full disk (Python ignores
    SIGXFSZ, so the write returns an error)."""
    import os
    import resource
    import subprocess

    def limit_writes():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run([*cli_command(), *map(str, args)], capture_output=True, text=True, preexec_fn=limit_writes,
                          env={**os.environ, "NSYSH2D_CACHE_DIR": str(cwd / "cache")}, cwd=cwd)


@pytest.mark.parametrize("option", ["-o", "--junit", "--summary", "baseline"])
def test_unwritable_or_full_outputs_are_exit_6_with_nothing_half_written(tmp_path, option):
    ro = tmp_path / "ro"
    ro.mkdir()
    target = ro / "out.txt"
    if option == "--summary":
        target.write_text("earlier steps\n")
    before = target.read_bytes() if target.exists() else None
    cmd = {"-o": ["analyze", REAL, "-o", target], "--junit": ["gate", REAL, "--junit", target],
           "--summary": ["gate", REAL, "--summary", target], "baseline": ["baseline", REAL, "-o", target]}[option]
    r = run_with_file_size_limit(64 if option != "--summary" else len(before) + 64, *cmd, cwd=tmp_path)
    assert r.returncode == 6, (r.returncode, r.stderr)
    assert str(target) in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert (target.read_bytes() if target.exists() else None) == before   # no partial output
    assert [f.name for f in ro.iterdir()] == ([] if before is None else ["out.txt"])   # no temporary left
    gone = tmp_path / "no-such-folder" / "sub"
    gone.parent.write_text("a file where a folder should be")
    r = run_cli(*[a if a != target else gone / "out.txt" for a in cmd])
    assert r.returncode == 6 and len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.parametrize("name", ["two\nlines.sqlite", "esc\x1b[2Jape.sqlite", "tab\tand\rcr.sqlite"])
def test_odd_file_names_keep_the_error_on_one_line(tmp_path, name):
    p = tmp_path / name
    p.write_text("not sqlite")
    for args in (["analyze", p], ["gate", p], ["analyze", p, REAL]):
        r = run_cli(*args)
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
        assert "not a SQLite file" in r.stderr and "\x1b" not in r.stderr


@pytest.fixture(scope="module")
def slow_inputs(tmp_path_factory):
    """Four nsys-shaped exports of 1 M runtime rows (benchmarks/make_large.py): about a second of work each."""
    import subprocess
    import sys

    from conftest import ROOT

    folder = tmp_path_factory.mktemp("slow")
    first = folder / "l1.sqlite"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "make_large.py"), "--scale", "0.05", str(first)],
                   check=True, capture_output=True)
    for i in range(2, 5):
        shutil.copy(first, folder / f"l{i}.sqlite")
    return sorted(folder.glob("l*.sqlite"))


@pytest.mark.parametrize("args", [
    ["analyze", "{0}", "{1}", "{2}", "{3}", "-j", "2", "--format", "json", "-o", "{out}/r.json"],
    ["analyze", "{0}", "{1}", "{2}", "{3}", "-o", "{out}/r.txt"],
    ["gate", "{0}", "{1}", "{2}", "{3}", "--junit", "{out}/j.xml", "--summary", "{out}/s.md"],
    ["compare", "{0}", "{1}", "-o", "{out}/c.txt"],
    ["baseline", "{0}", "-o", "{out}/b.json"],
], ids=["analyze-j2", "analyze", "gate", "compare", "baseline"])
def test_ctrl_c_is_exit_130_one_line_and_no_output(tmp_path, slow_inputs, args):
    import os
    import signal
    import subprocess

    out = tmp_path / "out"
    out.mkdir()
    argv = [a.format(*slow_inputs, out=out) for a in args] + ["--no-cache"]
    before = [sha256(p) for p in slow_inputs]
    env = {**os.environ, "NSYSH2D_CACHE_DIR": str(tmp_path), "NSYSH2D_TIMING": "1"}
    # SIGINT back to its default in the child: a shell runs background jobs (CI started with `&`) with SIGINT
    # ignored, and Python keeps an ignored SIGINT ignored, as a program run in the background should.
    p = subprocess.Popen([*cli_command(), *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True, env=env,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    first = p.stderr.readline()          # the first stage done: the work has begun (about a second per input)
    assert first.startswith("nsysh2d: "), first
    os.killpg(p.pid, signal.SIGINT)      # what a terminal's Ctrl-C does: the whole process group
    stdout, stderr = p.communicate(timeout=120)
    # NSYSH2D_TIMING's own lines (a stage's time; the threads of each trace opened, which a second input
    # started before the signal also prints) are not what is judged here.
    timing = re.compile(r"^nsysh2d: ([^:]+: [\d.]+ s, CPU|threads \d+, DuckDB memory limit )")
    lines = [ln for ln in stderr.splitlines() if not timing.match(ln)]
    assert p.returncode == 130, (p.returncode, stderr)
    assert lines == ["nsysh2d: error: interrupted"], lines
    assert stdout == "" and list(out.iterdir()) == []      # nothing half written, no temporaries
    assert [sha256(p) for p in slow_inputs] == before


@pytest.mark.parametrize("n", [8, 32])
def test_concurrent_analyses_share_one_cache_intact(tmp_path, n):
    """n processes at once, half on one file and half over four others, one cache folder: every output equals
    a lone run's, and the cache holds one complete, verifiable entry per file and nothing half written."""
    import hashlib
    import os
    import subprocess

    files = [tmp_path / f"f{i}.sqlite" for i in range(5)]
    for f, src in zip(files, [REAL, *SWEEP_TRACES.values()]):
        shutil.copy(src, f)
    cache = tmp_path / "cache"
    env = {**os.environ, "NSYSH2D_CACHE_DIR": str(cache)}
    exe = cli_command()
    alone = {f: subprocess.run([*exe, "analyze", f, "--format", "json", "--no-cache"], capture_output=True,
                               text=True).stdout for f in files}
    plan = [files[0] if i % 2 == 0 else files[1 + (i // 2) % 4] for i in range(n)]
    procs = [subprocess.Popen([*exe, "analyze", f, "--format", "json"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for f in plan]
    results = [p.communicate(timeout=600) + (p.returncode,) for p in procs]
    for f, (out, err, code) in zip(plan, results):
        assert code == 0 and err == "", err
        assert out == alone[f]
    entries = list((cache / "reports").iterdir())
    assert len(entries) == len(files) and all(e.suffix == ".json" for e in entries)   # no temporaries left
    import hmac

    key = (cache / ".key").read_bytes()   # one key, made by whichever process came first
    for e in entries:
        stored = json.loads(e.read_text())
        digest = hmac.new(key, json.dumps(stored["report"], sort_keys=True).encode(), hashlib.sha256).hexdigest()
        assert digest == stored["hmac"]
    again = subprocess.run([*exe, "analyze", files[0], "--format", "json"], capture_output=True, text=True, env=env)
    assert again.stdout == alone[files[0]]                          # served from the cache, still the same


def test_a_c_locale_without_utf8_mode_changes_nothing(tmp_path):
    """SQL files are read as UTF-8 and outputs are written as UTF-8 whatever the locale: stdout in a C locale
    (no UTF-8 mode, no locale coercion) equals what -o writes, names and all."""
    import os
    import subprocess

    p = tmp_path / "t.sqlite"
    shutil.copy(REAL, p)
    con = sqlite3.connect(p)
    con.execute("UPDATE StringIds SET value = 'schritt ü…' WHERE value LIKE 'pageable:16777216%'")
    con.execute("UPDATE NVTX_EVENTS SET text = 'schritt ü…' WHERE text LIKE 'pageable:16777216%'")
    con.commit()
    con.close()
    c_env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0",
             "NSYSH2D_CACHE_DIR": str(tmp_path / "cache")}
    exe = cli_command()
    for fmt in ("json", "csv", "markdown"):
        out = tmp_path / f"o.{fmt}"
        r = subprocess.run([*exe, "analyze", p, "--by", "nvtx", "--format", fmt], capture_output=True, env=c_env)
        assert r.returncode == 0, r.stderr
        w = subprocess.run([*exe, "analyze", p, "--by", "nvtx", "--format", fmt, "-o", out], env=c_env)
        assert w.returncode == 0
        assert r.stdout == out.read_bytes() and "schritt ü…".encode() in r.stdout
    t = subprocess.run([*exe, "analyze", p, "--by", "nvtx"], capture_output=True, env=c_env)
    assert t.returncode == 0 and b"schritt" in t.stdout


def test_threshold_with_an_impossible_payload_in_a_range_name(tmp_path):
    from conftest import H200

    folder = tmp_path / "in"
    folder.mkdir()
    p = folder / "sweep.sqlite"
    shutil.copy(H200 / "h2d-sweep.sqlite", p)
    con = sqlite3.connect(p)
    con.execute("UPDATE NVTX_EVENTS SET text = replace(text, 'bytes=65536', 'bytes=100000000000000000000') "
                "WHERE text LIKE 'h2d variant=%bytes=65536 %'")
    con.commit()
    con.close()
    before = sha256(p)
    r = run_cli("threshold", p)
    assert r.returncode == 2 and str(p) in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert sha256(p) == before and listing(folder) == ["sweep.sqlite"]


def test_impossible_gpu_times_are_counted_and_never_blocking(tmp_path):
    p = build(tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET start = 9200000000000000000 WHERE rowid IN "
                        "(SELECT rowid FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 1 AND bytes >= 4194304 "
                        "ORDER BY rowid DESC LIMIT 4)")
    rep = analyze(p)
    assert rep["totals"]["calls"] == sql_h2d_calls(p) == 256
    assert ("4 copy calls whose GPU activity has a NULL or impossible start/end (whether they waited for the GPU "
            "is unknown: counted, never as blocking)") in rep["warnings"]
