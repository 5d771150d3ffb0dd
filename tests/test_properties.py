"""Property-based: small nsys-shaped SQLite files with random tables, columns, NULLs and values never
crash the analyzer, exit with a documented code, and count what a direct SQL count says."""
import json
import os
import sqlite3

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nsysh2d.cli import main
from click.testing import CliRunner

NAMES = ["cudaMemcpyAsync_v3020", "cudaMemcpyAsync", "cudaLaunchKernel_v7000", "cudaMemcpy2DAsync_v3020",
         "cuMemcpyHtoDAsync_v2", "cudaMemcpy_v3020"]
maybe_int = st.one_of(st.none(), st.integers(-5, 2_000_000))

# Few correlation ids and processes, so that API rows, backtrace duplicates and activity rows meet often.
runtime_row = st.tuples(st.integers(0, 10_000), maybe_int, st.sampled_from([0, 0, 1, 67, None]),
                        st.sampled_from([1 << 24, 1 << 24, 2 << 24]), st.integers(0, 8),
                        st.sampled_from([0, 0, 1, 2, 3, 4, 5]))
memcpy_row = st.tuples(st.integers(0, 10_000), maybe_int, st.integers(0, 8),
                       st.sampled_from([1 << 24, 1 << 24, 2 << 24, None]),
                       st.one_of(st.none(), st.integers(0, 1 << 22)), st.sampled_from([0, 1, 2, 8, 99]),
                       st.sampled_from([0, 1, 2, 7, 42, None]), st.sampled_from([0, 1, 2, None]),
                       st.integers(0, 3))


@st.composite
def trace(draw):
    return {
        "runtime": draw(st.lists(runtime_row, max_size=40)),
        "memcpy": draw(st.lists(memcpy_row, max_size=40)),
        "drop": (draw(st.sets(st.sampled_from(["ENUM_CUDA_MEM_KIND", "ENUM_CUDA_MEMCPY_OPER", "ENUM_NSYS_EVENT_CLASS",
                                               "CUPTI_ACTIVITY_KIND_MEMCPY", "StringIds", "NVTX_EVENTS"]), max_size=2))
                 if draw(st.booleans()) else set()),
        "extra_column": draw(st.booleans()),
    }


def build(path, t):
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", list(enumerate(NAMES)))
    con.execute("CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER, name TEXT, label TEXT)")
    con.executemany("INSERT INTO ENUM_CUDA_MEM_KIND VALUES (?, ?, ?)", [(0, "P", "Pageable"), (1, "PI", "Pinned"),
                                                                         (2, "D", "Device")])
    con.execute("CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER, name TEXT, label TEXT)")
    con.executemany("INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (?, ?, ?)",
                    [(1, "H", "Host-to-Device"), (2, "D", "Device-to-Host"), (8, "DD", "Device-to-Device")])
    con.execute("CREATE TABLE ENUM_NSYS_EVENT_CLASS (id INTEGER, name TEXT, label TEXT)")
    con.executemany("INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (?, ?, ?)",
                    [(0, "R", "CUDA runtime"), (1, "D", "CUDA driver"), (67, "B", "CUDA backtrace")])
    extra = ", future INTEGER" if t["extra_column"] else ""
    con.execute(f"CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER, "
                f"globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER, callchainId INTEGER{extra})")
    for s, dur, ec, pid, corr, name in t["runtime"]:
        cols = (s, None if dur is None else s + dur, ec, pid + 7, corr, name, 0, None) + ((1,) if extra else ())
        con.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES ({','.join('?' * len(cols))})", cols)
    con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER, "
                "streamId INTEGER, correlationId INTEGER, globalPid INTEGER, bytes INTEGER, copyKind INTEGER, "
                "srcKind INTEGER, dstKind INTEGER)")
    for s, dur, corr, pid, nbytes, ck, sk, dk, stream in t["memcpy"]:
        con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (s, None if dur is None else s + dur, 0, stream, corr, pid, nbytes, ck, sk, dk))
    con.execute("CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT, globalTid INTEGER)")
    con.execute("INSERT INTO NVTX_EVENTS VALUES (0, 20000000, 59, 'step 0', ?)", ((1 << 24) + 7,))
    for table in t["drop"]:
        con.execute(f"DROP TABLE {table}")
    con.commit()
    expected = None
    if not {"CUPTI_ACTIVITY_KIND_MEMCPY", "StringIds"} & t["drop"]:
        # Direct count: API calls (process, correlationId) named like a memcpy (sync or async), with one chosen
        # row per call (runtime class first, then shortest), a valid duration, and memcpy activity.
        expected = con.execute("""
            WITH api AS (
                SELECT r.*, row_number() OVER (PARTITION BY r.globalTid >> 24, r.correlationId
                    -- class 0 is the CUDA runtime in this file's ENUM table and, when that table is
                    -- missing, in the ids every nsys ENUM table uses (what nsysh2d falls back to)
                    ORDER BY (r.eventClass IS 0) DESC,
                             (r.end - r.start) NULLS LAST) AS rn
                FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
                WHERE s.value GLOB 'cu*Memcpy*' AND r.correlationId IS NOT NULL)
            SELECT count(*) FROM api a
            WHERE rn = 1 AND a.end - a.start >= 0
              AND EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_MEMCPY m WHERE m.correlationId = a.correlationId
                          AND COALESCE(m.globalPid, (a.globalTid >> 24) << 24) = (a.globalTid >> 24) << 24)
        """).fetchone()[0]
    con.close()
    return expected


@settings(max_examples=int(os.environ.get("NSYSH2D_FUZZ_EXAMPLES", "40")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(t=trace())
def test_random_nsys_shaped_files(tmp_path_factory, t):
    path = tmp_path_factory.mktemp("prop") / "t.sqlite"
    expected = build(path, t)
    r = CliRunner().invoke(main, ["analyze", str(path), "--format", "json", "--direction", "all", "--calls", "all",
                                    "--no-cache"],
                           catch_exceptions=False)
    assert r.exit_code in (0, 2), r.output
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    if r.exit_code == 2:
        assert len(r.stderr.strip().splitlines()) == 1
        assert "StringIds" in r.stderr or "CUPTI_ACTIVITY_KIND_RUNTIME" in r.stderr
        return
    rep = json.loads(r.stdout)["reports"][0]
    if expected is not None:
        assert rep["totals"]["calls"] == expected
    assert sum(k["calls"] for k in rep["by_kind"]) == rep["totals"]["calls"]
