"""The read paths of an nsys export's big tables (source/ingest.py): a small table is read by DuckDB through the
attached file's sqlite_query, one statement and no Arrow; a larger one in parallel rowid parts, by the compiled
reader (source/_sqlite_ints.c) or, where it was not built, by ADBC. All run the same statement inside SQLite, so every
bundled real export gives the same report, call for call, each way; bad integers are the same one-line error; and a
small report imports no pyarrow at all (its ~0.15 s, issue 38). The compiled reader's own edge cases are checked
against the standard library's sqlite3 reading the same file."""
import json
import subprocess
import sys

import pytest

from conftest import DATA, ROOT, SWEEP_TRACES, edited_copy, fast_first
from nsysh2d.analysis import Analysis, Options
from nsysh2d.errors import BadInput
from nsysh2d.source import ingest
from nsysh2d.source.trace import Trace

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


@pytest.mark.parametrize("path", fast_first(sorted(REAL, key=lambda p: p.name != "api-probe.sqlite")),
                         ids=lambda p: p.name)
def test_every_read_path_gives_the_same_report(path, monkeypatch):
    small = report_and_calls(path)
    monkeypatch.setattr(ingest, "SMALL_ROWS", -1)   # every table in parts: the compiled reader, then ADBC
    for reader in ("compiled", "adbc"):
        monkeypatch.setenv("NSYSH2D_READER", reader)
        parallel = report_and_calls(path)
        diffs = [(i, k, v, b.get(k)) for i, (a, b) in enumerate(zip(small[1], parallel[1]))
                 for k, v in a.items() if b.get(k) != v]
        assert not diffs and len(small[1]) == len(parallel[1]) > 0, (reader, diffs[:5])
        assert json.dumps(small[0], sort_keys=True, default=str) == json.dumps(parallel[0], sort_keys=True, default=str)


@pytest.mark.parametrize("small_rows,reader", [(ingest.SMALL_ROWS, "compiled"), (-1, "compiled"), (-1, "adbc")],
                         ids=["small", "parallel-compiled", "parallel-adbc"])
def test_text_in_an_integer_column_is_one_error_on_every_path(tmp_path, monkeypatch, small_rows, reader):
    monkeypatch.setattr(ingest, "SMALL_ROWS", small_rows)
    monkeypatch.setenv("NSYSH2D_READER", reader)
    bad = edited_copy(DATA / "h200" / "api-probe.sqlite", tmp_path / "bad.sqlite",
                      "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId = 'x' || correlationId "
                      "WHERE rowid = (SELECT max(r.rowid) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s "
                      "ON s.id = r.nameId WHERE s.value GLOB 'cudaMemcpy*')")
    assert_non_integers_refused(bad, "CUPTI_ACTIVITY_KIND_RUNTIME")


def assert_non_integers_refused(path, table: str) -> None:
    with pytest.raises(BadInput) as e:
        report_and_calls(path)
    assert f"{table} holds non-integer values" in str(e.value) and "\n" not in str(e.value)


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


# ---------------------------------------------------------------- the compiled reader against sqlite3
def test_the_compiled_reader_is_built():
    """pip install builds it (setup.py); without a compiler and SQLite's headers the install falls back to ADBC, and
    this test says so: the suite is meant to run on the compiled path."""
    assert ingest.compiled_reader() is not None, "nsysh2d.source._sqlite_ints was not built: see setup.py"


def typed_file(tmp_path, rows: list[tuple]) -> str:
    import sqlite3

    path = tmp_path / "typed.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (a, b, c)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
    con.commit()
    con.close()
    return str(path)


def compiled(path, sql, kinds):
    """read_columns through ingest._query (the URI and Arrow wrapping the parts get) as plain Python rows."""
    names = {f"c{i}": ("INTEGER" if k == "i" else "BIGINT") for i, k in enumerate(kinds)}
    table = ingest._query(path, sql, names)
    assert [str(f.type) for f in table.schema] == ["int32" if k == "i" else "int64" for k in kinds]
    return [tuple(r.values()) for r in table.to_pylist()]


def test_compiled_reader_matches_sqlite3_across_growth_and_nulls(tmp_path):
    """10,000 rows (the buffers grow past their first 4,096), NULLs in every position of a byte of the bitmap,
    extremes of both integer kinds, a whole REAL read as its integer: what the standard library reads."""
    import sqlite3

    rows = [(None if i % 7 == 3 else (i * 2654435761) % 2 ** 63 - 2 ** 62,
             None if i % 9 in (0, 8) else (i % 2 ** 31) - (2 ** 30 if i % 2 else 0),
             None if i > 9000 else float(i) if i % 5 == 0 else i) for i in range(10_000)]
    rows += [(2 ** 63 - 1, 2 ** 31 - 1, -2 ** 63), (-2 ** 63, -2 ** 31, 0)]
    path = typed_file(tmp_path, rows)
    sql = "SELECT a, b, c FROM t ORDER BY rowid"
    expected = [tuple(None if v is None else int(v) for v in r)
                for r in sqlite3.connect(path).execute(sql).fetchall()]
    assert compiled(path, sql, "qiq") == expected
    assert compiled(path, "SELECT a, b, c FROM t WHERE 0", "qiq") == []


@pytest.mark.parametrize("value,kinds", [("12", "q"), (b"\x01", "q"), (1.5, "q"), (float("inf"), "q"), (2 ** 31, "i"),
                                         (-2 ** 31 - 1, "i"), (9.3e18, "q")],
                         ids=["text", "blob", "fraction", "infinity", "int32-over", "int32-under", "real-over"])
def test_compiled_reader_refuses_what_is_not_an_integer_of_its_kind(tmp_path, value, kinds):
    from nsysh2d.source import _sqlite_ints

    path = typed_file(tmp_path, [(1, 1, 1)] * 5000 + [(value, 1, 1)])
    with pytest.raises(_sqlite_ints.NotIntegerError):
        _sqlite_ints.read_columns(path, "SELECT a FROM t", kinds)


def test_compiled_reader_errors_are_one_line_and_leave_the_file_as_it_was(tmp_path):
    import hashlib

    from nsysh2d.source import _sqlite_ints

    path = typed_file(tmp_path, [(1, 2, 3)])
    before = hashlib.sha256(open(path, "rb").read()).hexdigest()
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all" * 100)
    cases = [(path, "SELECT a FROM missing", "q", _sqlite_ints.ReadError),
             (path, "SELECT a, b FROM t", "q", _sqlite_ints.ReadError),       # more columns than kinds
             (str(junk), "SELECT 1 FROM t", "q", _sqlite_ints.ReadError),
             (str(tmp_path / "absent.sqlite") + "?mode=ro", "SELECT 1", "q", _sqlite_ints.ReadError),
             (path, "SELECT a FROM t", "x", ValueError), (path, "SELECT a FROM t", "", ValueError)]
    for p, sql, kinds, error in cases:
        uri = p if p.endswith("?mode=ro") else f"file:{p}?mode=ro"
        with pytest.raises(error) as e:
            _sqlite_ints.read_columns(uri, sql, kinds)
        assert str(e.value) and "\n" not in str(e.value)
    assert hashlib.sha256(open(path, "rb").read()).hexdigest() == before
    assert sorted(x.name for x in tmp_path.iterdir()) == ["junk.sqlite", "typed.sqlite"]   # no journal, no -wal


def test_compiled_reader_reads_on_threads_at_once(tmp_path):
    """The GIL is released for the whole query: parts on several threads each get their own rows."""
    from concurrent.futures import ThreadPoolExecutor

    path = typed_file(tmp_path, [(i, i % 1000, None) for i in range(40_000)])
    sqls = [f"SELECT a, b FROM t WHERE rowid BETWEEN {lo} AND {lo + 9_999}" for lo in range(1, 40_001, 10_000)]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda s: compiled(path, s, "qi"), sqls * 3))
    assert [g[0][0] for g in got] == [0, 10_000, 20_000, 30_000] * 3
    assert all(len(g) == 10_000 and all(b == a % 1000 for a, b in g) for g in got)


# ---------------------------------------------------------------- native stacks read inside SQLite
def has_callchains(path) -> bool:
    import sqlite3

    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return bool(con.execute("SELECT count(*) FROM sqlite_master WHERE name = 'CUDA_CALLCHAINS'").fetchone()[0])
    finally:
        con.close()


WITH_STACKS = [p for p in REAL if has_callchains(p)]


@pytest.mark.parametrize("path", fast_first(WITH_STACKS), ids=lambda p: p.name)
def test_native_stacks_filtered_inside_sqlite_equal_the_scanners(path):
    """source/stacks.py reads CUDA_CALLCHAINS inside SQLite, only the calls' stacks; model/callchain_frames.sql reads
    the whole table through DuckDB's scanner. Same rows, same order, on every bundled export with CUDA backtraces."""
    from nsysh2d.source import sql

    a = Analysis.open(str(path))
    try:
        a.report(Options(min_ns=0, direction="all", top=5))
        mine = a.trace.native_stacks()
        reference = sql.run(a.trace.con, "model/callchain_frames").fetchall()
    finally:
        a.close()
    assert mine == reference and len(mine) > 0


def test_text_in_a_stack_table_is_one_error(tmp_path):
    src = WITH_STACKS[0]
    bad = edited_copy(src, tmp_path / "bad.sqlite", "UPDATE CUDA_CALLCHAINS SET stackDepth = 'deep' "
                      "WHERE rowid = (SELECT c.rowid FROM CUDA_CALLCHAINS c WHERE c.id = (SELECT r.callchainId FROM "
                      "CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId WHERE s.value GLOB 'cu*Memcpy*' "
                      "AND r.callchainId IS NOT NULL LIMIT 1) LIMIT 1)")
    assert_non_integers_refused(bad, "CUDA_CALLCHAINS")


def test_compiled_reader_on_damaged_files_returns_or_says_why(tmp_path):
    """A short in-suite fuzz (the long runs are fuzz/run.sh's, with libFuzzer and sanitizers): 400 files cut from a
    real export (fuzz/make_inputs.py) with bytes flipped, zeroed or copied over at random, read with the statements
    ingest.py runs. Each read returns columns of its row count or raises one of the reader's two errors; none
    crashes the process or leaves the file changed."""
    import hashlib
    import importlib.util
    import random

    from nsysh2d.source import _sqlite_ints

    spec = importlib.util.spec_from_file_location("make_inputs", ROOT / "fuzz" / "make_inputs.py")
    make_inputs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_inputs)
    seed = tmp_path / "seed.sqlite"
    make_inputs.seed(DATA / "h200" / "qwen3vl-before.sqlite", seed)
    with Trace.open(str(DATA / "h200" / "qwen3vl-before.sqlite")) as t:
        statements = [line.split("\t", 1) for line in make_inputs.statements(t)]
    clean = seed.read_bytes()
    rng = random.Random(38)
    outcomes = {"rows": 0, "NotIntegerError": 0, "ReadError": 0}
    for i in range(400):
        data = bytearray(clean)
        for _ in range(rng.choice([1, 2, 8, 64])):
            at = rng.randrange(len(data))
            op = rng.random()
            if op < 0.5:
                data[at] ^= 1 << rng.randrange(8)
            elif op < 0.75:
                n = rng.randrange(1, 64)
                data[at:at + n] = bytes(len(data[at:at + n]))
            else:
                src = rng.randrange(len(data))
                chunk = data[src:src + rng.randrange(1, 128)]
                data[at:at + len(chunk)] = chunk
        path = tmp_path / f"m{i}.sqlite"
        path.write_bytes(bytes(data))
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        for kinds, sql_text in statements:
            try:
                rows, cols = _sqlite_ints.read_columns(f"file:{path}?mode=ro", sql_text, kinds)
            except (_sqlite_ints.NotIntegerError, _sqlite_ints.ReadError) as e:
                assert str(e) and "\n" not in str(e)
                outcomes[type(e).__name__] += 1
                continue
            assert len(cols) == len(kinds)
            for (data_, valid, nulls), k in zip(cols, kinds):
                assert len(data_) == rows * (8 if k == "q" else 4)
                assert (valid is None) == (nulls == 0) and (valid is None or len(valid) == (rows + 7) // 8)
            outcomes["rows"] += 1
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
        path.unlink()
    # Damage that still reads and damage that is refused both occur (values of the wrong type: the test above).
    assert outcomes["rows"] > 0 and outcomes["ReadError"] > 0, outcomes


@pytest.mark.slow
def test_every_read_path_gives_the_same_report_on_a_generated_export(tmp_path, monkeypatch):
    """A generated nsys-shaped export (benchmarks/make_large.py at 0.01x: 200 k runtime rows, so every big table is
    read in parallel parts by default) gives the same report and per-call rows through the compiled reader, ADBC
    and the small path (DuckDB's sqlite_query, forced by raising SMALL_ROWS)."""
    big = tmp_path / "generated.sqlite"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "make_large.py"), "--scale", "0.01", str(big)],
                   check=True, capture_output=True)
    got = {}
    for name, small_rows, reader in (("compiled", ingest.SMALL_ROWS, "compiled"), ("adbc", ingest.SMALL_ROWS, "adbc"),
                                     ("small", 10 ** 9, "compiled")):
        monkeypatch.setattr(ingest, "SMALL_ROWS", small_rows)
        monkeypatch.setenv("NSYSH2D_READER", reader)
        rep, calls = report_and_calls(big)
        got[name] = (json.dumps(rep, sort_keys=True, default=str), calls)
    assert len(got["compiled"][1]) > 10_000
    assert got["compiled"] == got["adbc"] == got["small"]
