"""Issue 40: every long call where copies are made gets one cause (rules.sql's call_cause, analyses/by_cause.sql),
and the gate can be told which causes fail. Checked against plain SQL over the bundled H200 exports."""
import json
import sqlite3

from conftest import AFTER, BEFORE, run_cli

ALLOC = ("cudaHostAlloc", "cudaMallocHost", "cudaHostRegister", "cuMemHostAlloc", "cuMemAllocHost", "cuMemHostRegister")


def report(path, *args):
    r = run_cli("analyze", path, "--format", "json", "--top", "1000", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["reports"][0]


def alloc_calls_sql(path, min_ns=100_000):
    """Long host-allocation calls whose innermost NVTX range (same thread) also holds a memcpy call: plain SQL."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    names = ",".join(f"'{n}'" for n in ALLOC)
    return con.execute(f"""
        WITH a AS (
            SELECT DISTINCT r.start, r."end", r.globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
            WHERE (s.value IN ({names}) OR substr(s.value, 1, instr(s.value || '_v', '_v') - 1) IN ({names}))
              AND r."end" - r.start >= {min_ns} AND r.eventClass = 0),
        inner AS (
            SELECT a.start, a."end", (SELECT n.rowid FROM NVTX_EVENTS n WHERE n.globalTid = a.globalTid
                                     AND n.start <= a.start AND n."end" >= a."end" AND n.eventType = 59
                                     ORDER BY n."end" - n.start LIMIT 1) AS rid,
                   a.globalTid
            FROM a)
        SELECT i.start, i."end",
               -- issue 56: the evidence. A copy of the process in flight during it (its call issued before the
               -- allocation ended, its GPU copy ending after the allocation started) ...
               EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME c JOIN StringIds cs ON cs.id = c.nameId
                       JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = c.correlationId
                       WHERE cs.value LIKE 'cu%Memcpy%' AND c.globalTid / 16777216 = i.globalTid / 16777216
                       AND c.start < i."end" AND m."end" > i.start) AS in_flight,
               -- ... or none, after the process's first copy call
               i.start > (SELECT min(c.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME c JOIN StringIds cs ON cs.id = c.nameId
                          JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = c.correlationId
                          WHERE cs.value LIKE 'cu%Memcpy%' AND c.globalTid / 16777216 = i.globalTid / 16777216) AS later
        FROM inner i JOIN NVTX_EVENTS n ON n.rowid = i.rid
        WHERE EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME c JOIN StringIds cs ON cs.id = c.nameId
                      WHERE cs.value LIKE 'cu%Memcpy%' AND c.globalTid = i.globalTid
                      AND c.start >= n.start AND c."end" <= n."end")""").fetchall()


def alloc_causes_sql(path):
    """{cause: (calls, host ns)} of the long allocations in a copy range: in flight, or new after the first copy."""
    out = {}
    for start, end, in_flight, later in alloc_calls_sql(path):
        cause = "host_allocation" if in_flight else "new_host_allocation" if later else None
        if cause:
            n, ns = out.get(cause, (0, 0))
            out[cause] = (n + 1, ns + end - start)
    return out


def long_copies_sql(path, min_ns=100_000):
    """Long async H2D memcpy calls: count and host time, plain SQL (copyKind 1 = HtoD; one row per call: a
    CUDA backtrace row, eventClass 67, repeats its call's correlationId under the plain name; eventClass 0 is the
    call itself)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    return con.execute(f"""
        SELECT count(*), sum(d) FROM (
            SELECT DISTINCT r.globalTid, r.correlationId, r."end" - r.start AS d FROM CUPTI_ACTIVITY_KIND_RUNTIME r
            JOIN StringIds s ON s.id = r.nameId
            JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = r.correlationId
            WHERE s.value LIKE 'cu%Memcpy%Async%' AND m.copyKind = 1 AND r."end" - r.start >= {min_ns}
              AND r.eventClass = 0)""").fetchone()


def test_host_allocations_and_copy_causes_equal_plain_sql():
    for path in (AFTER, BEFORE):
        rep = report(path)
        rows = {r["cause"]: r for r in rep["by_cause"]}
        allocs = {c: (r["calls"], r["host_ns"]) for c, r in rows.items() if c.endswith("host_allocation")}
        assert allocs == alloc_causes_sql(path)
        n, ns = long_copies_sql(path)
        copies = [r for c, r in rows.items() if not c.endswith("host_allocation")]
        assert sum(r["calls"] for r in copies) == n == rep["totals"]["long_calls"]
        assert sum(r["host_ns"] for r in copies) == ns
        # every long call is in top here: the per-cause counts are those of its rows
        assert len(rep["top"]) == n
        for cause, r in rows.items():
            if not cause.endswith("host_allocation"):
                assert r["calls"] == sum(t["cause"] == cause for t in rep["top"])
    # the `after` fix pays cudaHostAlloc inside vision_pos_ids (`.pin_memory()` growing the cache): 3.7 ms, with no
    # copy in flight (issue 56: so not "while earlier copies were in flight")
    after = {r["cause"]: r for r in report(AFTER)["by_cause"]}
    new = after["new_host_allocation"]
    assert new["calls"] == 1 and new["longest_nvtx_range"] == "vision_pos_ids" and new["longest_api"] == "cudaHostAlloc"
    assert "host_allocation" not in after


def test_each_copy_cause_follows_its_rule():
    """The causes of the top rows follow rules.sql from the row's own evidence, in its order."""
    for path in (AFTER, BEFORE):
        for t in report(path)["top"]:
            pageable = "Pageable" in (t["src_kind"], t["dst_kind"])
            if t["waited_for_gpu"] and t["backlog_ns"] >= 0.5 * t["host_ns"]:
                expected = "backlog"
            elif t["queued_ahead"] >= 1000:
                expected = "launch_queue"
            elif t["sync"] or pageable or t["wait_ns"] + t["gpu_ns"] <= t["host_ns"]:
                expected = "own_transfer"
            else:
                expected = "unknown"
            assert t["cause"] == expected, t


def test_the_table_says_what_to_do_per_cause():
    text = " ".join(run_cli("analyze", AFTER).stdout.split())
    assert "long calls by cause" in text
    assert "new_host_allocation: pinned host memory allocated on the copy path with no copy in flight" in text
    assert "launch_queue: pinning does not help" in text


def test_gate_fails_on_the_causes_it_is_told(tmp_path):
    r = run_cli("gate", AFTER, "--max-long-calls", "99", "--fail-on-cause", "new_host_allocation",
                "--junit", tmp_path / "g.xml")
    assert r.returncode == 1
    assert "[FAIL] no-long-calls-of-cause: 1 long call whose cause is new_host_allocation" in r.stdout
    assert 'name="no-long-calls-of-cause"' in (tmp_path / "g.xml").read_text()
    r = run_cli("gate", AFTER, "--max-long-calls", "99", "--fail-on-cause", "backlog", "--fail-on-cause", "unknown")
    assert r.returncode == 0 and "[pass] no-long-calls-of-cause: 0 long calls whose cause is backlog/unknown" in r.stdout
    r = run_cli("gate", BEFORE, "--max-long-calls", "99", "--fail-on-cause", "backlog", "--format", "json")
    doc = json.loads(r.stdout)
    assert r.returncode == 1
    rule = next(x for v in doc["verdicts"] for x in v["rules"] if x["name"] == "no-long-calls-of-cause")
    assert not rule["passed"] and {o["cause"] for o in rule["offenders"]} == {"backlog"}
    # from pyproject.toml, and a cause nobody knows: one line, exit 2
    (tmp_path / "pyproject.toml").write_text('[tool.nsysh2d.gate]\nmax-long-calls = 99\nfail-causes = ["launch_queue"]\n')
    r = run_cli("gate", AFTER, "--config", tmp_path / "pyproject.toml")
    assert r.returncode == 1 and "5 long calls whose cause is launch_queue" in r.stdout
    r = run_cli("gate", AFTER, "--fail-on-cause", "slow")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "unknown cause 'slow'" in r.stderr
