"""Issue 37 beyond the output strings (those are tests/test_hostile_strings.py): what the gate writes on a
shared machine, and the trace files that tried to flip its verdict (docs/security.md)."""
import os
import shutil
import sqlite3
import subprocess

import pytest

from conftest import cli_command, edited_copy, H200, run_cli, sha256

PROBE = H200 / "api-probe.sqlite"   # fails the gate: 8 long-blocking pageable copies


def test_summary_is_never_appended_through_a_symbolic_link(tmp_path):
    victim = tmp_path / "authorized_keys"
    victim.write_text("ssh-ed25519 AAAA me\n")
    before = sha256(victim)
    link = tmp_path / "summary.md"
    link.symlink_to(victim)
    r = run_cli("gate", PROBE, "--summary", link)
    assert r.returncode == 6 and "symbolic link" in r.stderr and len(r.stderr.splitlines()) == 1
    assert sha256(victim) == before and link.is_symlink()
    # a regular file the user owns, or a new one, is appended to as before
    real = tmp_path / "real.md"
    real.write_text("earlier step\n")
    assert run_cli("gate", PROBE, "--summary", real).returncode == 1
    assert real.read_text().startswith("earlier step\n## nsysh2d gate")
    assert run_cli("gate", PROBE, "--summary", tmp_path / "new.md").returncode == 1


def as_nobody(*args) -> list[str]:
    """The installed CLI with these arguments, run as a second user (nobody) through setpriv."""
    return ([shutil.which("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups"]
            + cli_command() + [str(a) for a in args])


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv for a 2nd user")
def test_summary_owned_by_another_user_is_refused():
    """Two users (setpriv): a world-writable summary file planted by root is not appended to by nobody."""
    import tempfile
    from pathlib import Path

    tmp_path = Path(tempfile.mkdtemp(prefix="nsysh2d-2users-"))   # pytest's own folder is root's alone
    os.chmod(tmp_path, 0o777)
    planted = tmp_path / "summary.md"
    planted.write_text("")
    os.chmod(planted, 0o666)
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    os.chown(cache, 65534, 65534)
    env = {**os.environ, "NSYSH2D_CACHE_DIR": str(cache), "HOME": str(tmp_path)}
    r = subprocess.run(as_nobody("gate", PROBE, "--summary", planted), capture_output=True, text=True, env=env)
    try:
        assert r.returncode == 6 and "owned by another user" in r.stderr, r.stderr
        assert planted.read_text() == ""
    finally:
        shutil.rmtree(tmp_path)


# ----------------------------------------------------------------------------------------- verdict flips
# Each edit below made the gate PASS api-probe.sqlite (8 long-blocking pageable copies, by plain SQL) before
# issue 37; each must now fail it with a message naming what is wrong.
LONG_ASYNC = ("(SELECT r.rowid FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
              "WHERE s.value GLOB 'cu*Memcpy*Async*' AND r.end - r.start > 1000000)")


def edited(tmp_path, *statements) -> str:
    return str(edited_copy(PROBE, tmp_path / "edited.sqlite", *statements))


def long_pageable_copies_by_sql(path) -> int:
    """The truth the edits hide: async copy calls over 1 ms whose activity says Pageable -> Device by its
    numeric ids (CUPTI: srcKind 0 = Pageable, dstKind 2 = Device), in the same process."""
    con = sqlite3.connect(path)
    try:
        return con.execute(
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r NOT INDEXED JOIN CUPTI_ACTIVITY_KIND_MEMCPY m "
            "ON m.correlationId = r.correlationId AND m.globalPid = (r.globalTid / 16777216) * 16777216 "
            "WHERE m.srcKind = 0 AND m.dstKind = 2 AND r.end - r.start > 1000000 AND r.nameId IN "
            "(SELECT id FROM StringIds NOT INDEXED WHERE value GLOB 'cu*Memcpy*Async*')").fetchone()[0]
    finally:
        con.close()


def gate_json(path, *args):
    import json

    r = run_cli("gate", path, "--format", "json", *args)
    return r, (json.loads(r.stdout) if r.stdout.strip() else None)


def failed_rules(doc) -> dict:
    return {r["name"]: r["message"] for v in doc["verdicts"] for r in v["rules"] if not r["passed"]}


def test_the_unedited_probe_fails_with_eight(tmp_path):
    assert long_pageable_copies_by_sql(PROBE) == 8
    r, doc = gate_json(PROBE)
    assert r.returncode == 1 and "8 long-blocking" in failed_rules(doc)["max-long-calls"]


@pytest.mark.parametrize("table", ["CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY"])
def test_a_column_named_rowid_is_refused(tmp_path, table):
    """A user column `rowid` (NULL everywhere) shadows SQLite's row number: reads ranging over it saw no row."""
    path = edited(tmp_path, f"ALTER TABLE {table} ADD COLUMN rowid INTEGER")
    con = sqlite3.connect(path)
    assert con.execute(f"SELECT count(rowid) FROM {table}").fetchone()[0] == 0   # what a rowid read sees
    con.close()
    r = run_cli("gate", path)
    assert r.returncode == 2 and f"table {table} has a column named rowid" in r.stderr, r.stderr


def test_copy_kind_unknown_with_pageable_to_device_is_h2d(tmp_path):
    path = edited(tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET copyKind = 0")
    assert long_pageable_copies_by_sql(path) == 8
    r, doc = gate_json(path)
    assert r.returncode == 1 and "8 long-blocking h2d copies" in failed_rules(doc)["max-long-calls"]


@pytest.mark.parametrize("edit,named", [
    ("UPDATE ENUM_CUDA_MEM_KIND SET label = CASE id WHEN 0 THEN 'Pinned' ELSE 'Pageable' END WHERE id IN (0, 1)",
     "ENUM_CUDA_MEM_KIND labels id 0 'Pinned' where CUPTI's id 0 is 'Pageable'"),
    ("UPDATE ENUM_CUDA_MEMCPY_OPER SET label = CASE id WHEN 1 THEN 'Device-to-Host' ELSE 'Host-to-Device' END "
     "WHERE id IN (1, 2)", "ENUM_CUDA_MEMCPY_OPER labels id 1 'Device-to-Host' where CUPTI's id 1 is 'Host-to-Device'"),
])
def test_enum_labels_that_contradict_cupti_ids_fail_the_gate(tmp_path, edit, named):
    path = edited(tmp_path, edit)
    assert long_pageable_copies_by_sql(path) == 8
    for args in ([], ["--kind", "Pageable"]):
        r, doc = gate_json(path, *args)
        assert r.returncode == 1 and named in failed_rules(doc)["consistent-trace"], doc


def test_a_string_id_with_two_names_fails_the_gate(tmp_path):
    """StringIds rebuilt without its primary key, the async copy APIs' ids given a second, synchronous name."""
    path = edited(tmp_path,
                  "CREATE TABLE s2 AS SELECT * FROM StringIds", "DROP TABLE StringIds",
                  "CREATE TABLE StringIds (id INTEGER NOT NULL, value TEXT NOT NULL)",
                  "INSERT INTO StringIds SELECT * FROM s2", "DROP TABLE s2",
                  "INSERT INTO StringIds SELECT id, replace(value, 'Async', '') FROM StringIds "
                  "WHERE value GLOB 'cu*Memcpy*Async*'")
    r, doc = gate_json(path)
    assert r.returncode == 1 and "ids in StringIds with two or more different names" in failed_rules(doc)["consistent-trace"]


def test_copy_calls_with_unusable_times_fail_the_gate(tmp_path):
    path = edited(tmp_path, f"UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET end = 4611686018427387904 WHERE rowid IN {LONG_ASYNC}")
    r, doc = gate_json(path)
    assert r.returncode == 1
    assert "8 copy calls with an unusable host start/end" in failed_rules(doc)["classified-copies"]


def test_a_graph_launch_of_another_process_excuses_no_copy(tmp_path):
    """The long copies' calls renamed (so no copy API claims their activity), and a cudaGraphLaunch of
    another process given their correlationIds: activity of a graph belongs to its own process only."""
    other_process = "(globalTid + 16777216 * 7)"
    path = edited(tmp_path,
                  "INSERT INTO StringIds SELECT max(id) + 1, 'cudaGraphLaunch_v10000' FROM StringIds",
                  "INSERT INTO StringIds SELECT max(id) + 1, 'cudaStreamQuery_v3020' FROM StringIds",
                  f"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, "
                  f"returnValue) SELECT start, start + 5000, eventClass, {other_process}, correlationId, "
                  f"(SELECT id FROM StringIds WHERE value = 'cudaGraphLaunch_v10000'), 0 "
                  f"FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE rowid IN {LONG_ASYNC}",
                  f"UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = (SELECT id FROM StringIds WHERE value = "
                  f"'cudaStreamQuery_v3020') WHERE rowid IN {LONG_ASYNC} AND globalTid < 281484707496516 + 16777216")
    r, doc = gate_json(path)
    assert r.returncode == 1
    assert "8 copies that no copy API call claims" in failed_rules(doc)["classified-copies"], doc


def test_an_index_that_disagrees_with_its_table_hides_nothing(tmp_path):
    """An index on correlationId relabelled (writable_schema) as one on nameId: integrity_check reports
    it, and a read through it would find other rows. The reads never use an index."""
    path = edited(tmp_path, "CREATE INDEX ix ON CUPTI_ACTIVITY_KIND_RUNTIME (correlationId)",
                  "CREATE INDEX iy ON StringIds (value)")
    con = sqlite3.connect(path)
    con.execute("PRAGMA writable_schema = ON")
    con.execute("UPDATE sqlite_master SET sql = replace(sql, '(correlationId)', '(nameId)') WHERE name = 'ix'")
    con.commit()
    con.close()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] != "ok"
    con.close()
    assert long_pageable_copies_by_sql(path) == 8
    r, doc = gate_json(path)
    assert r.returncode == 1 and "8 long-blocking" in failed_rules(doc)["max-long-calls"], r.stderr


def test_a_long_call_relabelled_as_a_backtrace_beside_a_short_twin_fails_the_gate(tmp_path):
    """eventClass 67 (CUDA backtrace) on the 8 long calls, and a 5 us CUDA-runtime twin of each: the fold
    would judge the twin. Rows of one call disagreeing on its duration cannot pass."""
    path = edited(tmp_path,
                  f"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, "
                  f"returnValue) SELECT start, start + 5000, 0, globalTid, correlationId, nameId, 0 "
                  f"FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE rowid IN {LONG_ASYNC}",
                  f"UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET eventClass = 67 WHERE rowid IN {LONG_ASYNC}")
    r, doc = gate_json(path)
    assert r.returncode == 1
    assert "8 copy calls whose runtime and backtrace rows disagree" in failed_rules(doc)["classified-copies"], doc


@pytest.mark.parametrize("name", ["h200-sweep-nsys2025.3-cudabacktrace.sqlite", "h200-sweep-nsys2023.4.sqlite"])
def test_real_backtrace_exports_are_consistent(name):
    """nsys's own backtrace rows (eventClass 67) beside their calls: nothing the checks above call wrong."""
    import json

    from conftest import SHARED

    doc = json.loads(run_cli("analyze", SHARED / name, "--format", "json").stdout)["reports"][0]
    assert doc["inconsistencies"] == [] and doc["totals"]["disagreeing_calls"] == 0
    assert doc["totals"]["unusable_time_calls"] == 0


# ----------------------------------------------------------------------------------------- the cache
def test_a_cache_folder_others_can_write_is_refused(tmp_path):
    cache = tmp_path / "cache"
    assert run_cli("analyze", PROBE, env={"NSYSH2D_CACHE_DIR": str(cache)}).returncode == 0
    assert cache.stat().st_mode & 0o777 == 0o700   # made private
    os.chmod(cache, 0o777)
    r = run_cli("analyze", PROBE, env={"NSYSH2D_CACHE_DIR": str(cache)})
    assert r.returncode == 2 and "writable by other users" in r.stderr and len(r.stderr.splitlines()) == 1
    assert run_cli("analyze", PROBE, "--no-cache", env={"NSYSH2D_CACHE_DIR": str(cache)}).returncode == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the folder to another user")
def test_a_cache_folder_of_another_user_is_refused(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    os.chown(cache, 65534, 65534)
    r = run_cli("gate", PROBE, env={"NSYSH2D_CACHE_DIR": str(cache)})
    assert r.returncode == 2 and "owned by another user" in r.stderr


def test_a_planted_cache_entry_is_not_served(tmp_path):
    """An entry with passing numbers and a correct SHA-256 of itself (what the old self-digest checked),
    or an HMAC under another key, is recomputed: only this cache's key makes an entry it serves."""
    import hashlib
    import hmac
    import json

    cache = tmp_path / "cache"
    env = {"NSYSH2D_CACHE_DIR": str(cache)}
    assert run_cli("gate", PROBE, env=env).returncode == 1
    (entry,) = (cache / "reports").glob("*.json")
    stored = json.loads(entry.read_text())
    report = stored["report"]
    for row in report["by_kind"] + report["by_step"]:
        row["blocking_calls"] = row["long_calls"] = 0
    report["top"] = []
    body = json.dumps(report, sort_keys=True).encode()
    for planted in ({"sha256": hashlib.sha256(body).hexdigest(), "report": report},
                    {"hmac": hmac.new(b"k" * 32, body, hashlib.sha256).hexdigest(), "report": report}):
        entry.write_text(json.dumps(planted))
        assert run_cli("gate", PROBE, env=env).returncode == 1   # still fails: the entry was not served
    assert (cache / ".key").stat().st_mode & 0o777 == 0o600


def test_spill_files_go_to_a_new_private_folder_per_run(tmp_path, monkeypatch):
    """DuckDB's spill files are never created in a shared or pre-existing folder (links planted under
    its file names would have their targets overwritten): each run gets its own 0700 folder, removed after."""
    from nsysh2d.source.trace import Trace

    monkeypatch.setenv("NSYSH2D_CACHE_DIR", str(tmp_path / "cache"))
    victim = tmp_path / "victim"
    victim.write_text("keep")
    spill = tmp_path / "cache" / "spill"
    spill.mkdir(parents=True)
    for i in range(4):
        (spill / f"duckdb_temp_storage_DEFAULT-{i}.tmp").symlink_to(victim)
    tr = Trace.open(str(PROBE))
    folder = tr.con.execute("SELECT current_setting('temp_directory')").fetchone()[0]
    assert os.path.dirname(folder) == str(spill) and os.stat(folder).st_mode & 0o777 == 0o700
    assert os.listdir(folder) == []
    tr.close()
    assert not os.path.exists(folder) and victim.read_text() == "keep"


@pytest.mark.parametrize("same_activity", [True, False])
def test_twelve_thousand_rows_sharing_one_correlation_id_stay_linear(tmp_path, same_activity):
    """12,000 runtime rows and 12,000 activity rows of one correlationId (a 1.4 MB file) were joined each
    with each: minutes and 12 GB spilled. Now the key is folded like any shared id, the gate fails on it
    and the real copies are still judged. The timeout is a hang guard, not a timing assertion."""
    shift = "0" if same_activity else "i * 10"
    path = edited(tmp_path,
                  "CREATE TEMP TABLE n AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                  "WHERE i < 12000) SELECT i FROM n",
                  "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, "
                  "returnValue) SELECT r.start + i * 10, r.start + i * 10 + 5, r.eventClass, r.globalTid, 999999, "
                  "r.nameId, 0 FROM n, (SELECT * FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId = 251) r",
                  "CREATE TEMP TABLE m1 AS SELECT * FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE correlationId = 251",
                  "UPDATE m1 SET correlationId = 999999",
                  f"INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, correlationId, "
                  f"globalPid, bytes, copyKind, srcKind, dstKind) SELECT start + {shift}, end + {shift}, deviceId, "
                  f"contextId, streamId, correlationId, globalPid, bytes, copyKind, srcKind, dstKind FROM n, m1")
    con = sqlite3.connect(path)
    assert con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId = 999999").fetchone()[0] \
        == con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE correlationId = 999999").fetchone()[0] \
        == 12000
    con.close()
    import json

    exe = cli_command()
    r = subprocess.run([*exe, "gate", path, "--format", "json", "--no-cache"], capture_output=True, text=True,
                       timeout=120)
    rules = failed_rules(json.loads(r.stdout))
    assert r.returncode == 1 and "8 long-blocking" in rules["max-long-calls"]
    assert "1 correlationIds shared by several memcpy calls" in rules["classified-copies"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_behind_stdout_says_stdout(tmp_path):
    exe = cli_command()
    with open("/dev/full", "w") as full:
        r = subprocess.run([*exe, "analyze", str(PROBE)], stdout=full, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 6 and r.stderr.splitlines() == [
        "nsysh2d: error: stdout: cannot write (No space left on device)"]


def test_a_planted_export_is_not_read(tmp_path):
    """An export in the cache that nsysh2d did not write and seal (a passing trace put where the report's
    export would be) is not read as the report: it is exported again, here with a failing nsys."""
    from nsysh2d.cache import file_key

    cache = tmp_path / "cache"
    rep = tmp_path / "pr.nsys-rep"
    rep.write_bytes(b"the pull request's report")
    (cache / "exports").mkdir(parents=True, mode=0o700)
    os.chmod(cache, 0o700)
    shutil.copy(H200 / "qwen3vl-after.sqlite", cache / "exports" / f"{file_key(str(rep))}.sqlite")
    r = run_cli("gate", rep, "--nsys", "/bin/false", env={"NSYSH2D_CACHE_DIR": str(cache)})
    assert r.returncode not in (0, 1) and "PASS" not in r.stdout and str(rep) in r.stderr


def test_a_blob_in_an_nvtx_name_is_one_line(tmp_path):
    path = edited(tmp_path, "UPDATE NVTX_EVENTS SET text = X'00ff41' WHERE text = 'step 3'")
    for cmd in ("analyze", "gate"):
        r = run_cli(cmd, path)
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and '"text"' in r.stderr, r.stderr


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv for a 2nd user")
def test_a_cache_planted_by_another_user_is_refused_by_the_victim():
    """Two users (setpriv): root makes a cache folder (with an entry) where nobody's NSYSH2D_CACHE_DIR
    points; nobody's analysis refuses it instead of reading it, and still runs with --no-cache."""
    import tempfile
    from pathlib import Path

    base = Path(tempfile.mkdtemp(prefix="nsysh2d-2users-"))
    try:
        os.chmod(base, 0o755)
        cache = base / "cache"
        planted = run_cli("analyze", PROBE, env={"NSYSH2D_CACHE_DIR": str(cache)})   # root's entries
        assert planted.returncode == 0 and list((cache / "reports").glob("*.json"))
        os.chmod(cache, 0o755)   # readable by nobody, as a shared cache would be
        env = {**os.environ, "NSYSH2D_CACHE_DIR": str(cache), "HOME": str(base), "TMPDIR": "/tmp"}
        r = subprocess.run(as_nobody("analyze", PROBE), capture_output=True, text=True, env=env)
        assert r.returncode == 2 and "owned by another user" in r.stderr and not r.stdout, r.stderr
        ok = subprocess.run(as_nobody("analyze", PROBE, "--no-cache"), capture_output=True, text=True, env=env)
        assert ok.returncode == 0, ok.stderr
    finally:
        shutil.rmtree(base)
