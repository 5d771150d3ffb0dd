"""The stream backlog is computed on demand, only for the calls a report needs (analysis.py,
backlog_probes.sql, work windows read with the condition pushed into SQLite). It must never change
an answer: every figure of a report equals the one computed with every call's backlog known."""
import pytest

from conftest import DATA, SWEEP_TRACES
from nsysh2d.analysis import Analysis, Options

REAL = [*SWEEP_TRACES.values(), DATA / "h200" / "h2d-sweep.sqlite", DATA / "h200" / "qwen3vl-before.sqlite",
        DATA / "h200" / "qwen3vl-after.sqlite"]


def blocking_from_copies(path, opts):
    """Blocking calls and time per memory-kind pair from every call's own flags (all backlogs known)."""
    a = Analysis.open(str(path))
    try:
        df = a.copies()
        assert df["backlog_ns"].null_count() == 0  # copies() asks for every call's backlog
        out = {}
        for r in df.iter_rows(named=True):
            if (opts.direction != "all" and r["direction"] != opts.direction) or r["host_ns"] < opts.min_ns:
                continue
            key = (r["src_kind_name"], r["dst_kind_name"])
            n, t = out.get(key, (0, 0))
            out[key] = (n + 1, t + r["host_ns"]) if r["waited_for_gpu"] else (n, t)
        return out
    finally:
        a.close()


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
@pytest.mark.parametrize("min_ns", [0, 100_000, 2_000_000])
def test_report_equals_full_backlog(path, min_ns):
    opts = Options(min_ns=min_ns, direction="all", top=3)
    a = Analysis.open(str(path))
    try:
        rep = a.report(opts)
        computed = a.trace.con.execute("SELECT count(*) FROM backlog").fetchone()[0]
        calls = rep["totals"]["calls"]
    finally:
        a.close()
    got = {(r["src_kind"], r["dst_kind"]): (r["blocking_calls"], r["blocking_ns"])
           for r in rep["by_kind"] if r["long_calls"]}
    assert got == blocking_from_copies(path, opts)
    if min_ns:
        # On demand means on demand: never every call's backlog for a report with a real threshold.
        assert computed < calls


def test_top_rows_carry_their_backlog():
    a = Analysis.open(str(DATA / "h200" / "qwen3vl-before.sqlite"))
    try:
        top = a.top(Options(top=5))
        full = a.copies()
    finally:
        a.close()
    assert top.height == 5 and top["backlog_ns"].null_count() == 0
    by_start = {r["api_start"]: r["backlog_ns"] for r in full.iter_rows(named=True)}
    for r in top.iter_rows(named=True):
        assert r["backlog_ns"] == by_start[r["api_start_ns"]]


def test_span_condition_selects_exactly_the_overlapping_rows():
    """The cheap pre-test in SQLite (time buckets of the row's end, long rows apart) never drops a row the
    exact overlap test keeps: compared, inside SQLite itself, on rows of every kind of length and place
    (short, long, zero, negative, far away) against spans of every width, bucket widths forced small."""
    import random
    import sqlite3

    from nsysh2d.source.ingest import spans_condition

    rng = random.Random(21)
    db = sqlite3.connect(":memory:")
    db.execute('CREATE TABLE k (start INTEGER, "end" INTEGER)')
    for _ in range(20):
        spans = sorted((lo, lo + rng.choice([0, 1, 500, 10**4, 3 * 10**6, 10**9]))
                       for lo in rng.sample(range(-10**6, 10**9), rng.randint(1, 64)))
        rows = []
        for _ in range(3000):
            s = rng.choice([rng.randint(-2 * 10**6, 2 * 10**9), rng.choice(spans)[0] + rng.randint(-5000, 5000)])
            rows.append((s, s + rng.choice([0, 1, 700, 2**20, 2**20 + 1, 5 * 10**6, 10**9, -3])))
        db.execute("DELETE FROM k")
        db.executemany("INSERT INTO k VALUES (?, ?)", rows)
        want = {r for r in rows if any(r[1] >= lo and r[0] < hi for lo, hi in spans)}
        for bits, cap in ((20, 4096), (4, 64), (8, 20000)):
            got = set(db.execute(f"SELECT start, \"end\" FROM k WHERE {spans_condition(spans, bits, cap)}"))
            assert got == want
    assert db.execute(f"SELECT count(*) FROM k WHERE {spans_condition([])}").fetchone()[0] == 0
