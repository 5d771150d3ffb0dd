"""Writes what fuzz/run.sh needs: the statements ingest.py runs (statements.txt: "<kinds><TAB><sql>"; for
fuzz/run_percall.sh, those of the compiled per-call pass: percall_statements.txt) and a seed
corpus of small SQLite files cut from the bundled real exports (the tables those statements read, a few hundred
rows each, 512-byte pages so that a mutation lands in a page SQLite decodes).

usage: python fuzz/make_inputs.py OUT_FOLDER"""
import sqlite3
import sys
from pathlib import Path

from nsysh2d.source import ingest
from nsysh2d.source.trace import COPY_CALLS, Trace

REPO = Path(__file__).resolve().parents[1]
SEEDS = ["tests/data/h200/qwen3vl-before.sqlite", "tests/data/h200/api-probe.sqlite",
         "tests/data/h200/graph-probe-graph.sqlite"]
TABLES = {"CUPTI_ACTIVITY_KIND_RUNTIME": 300, "CUPTI_ACTIVITY_KIND_MEMCPY": 100, "CUPTI_ACTIVITY_KIND_KERNEL": 100,
          "CUPTI_ACTIVITY_KIND_MEMSET": 50, "StringIds": 400}


def statements(trace) -> list[str]:
    """The statements of a large file's parts ("<kinds><TAB><sql>"), as ingest.plan makes them for the copy calls
    (trace.COPY_CALLS) and the kernel, memset and memcpy reads, for a file of any size."""
    spans = ingest.spans_condition([(0, 2 ** 40), (2 ** 41, 2 ** 42)])
    int32 = {"device_id": "INTEGER", "stream_id": "INTEGER"}
    reads = [COPY_CALLS] + [ingest.Read(v, spans if v != "memcpy" else None, None, int32)
                            for v in ("kernel", "memset", "memcpy")]
    out = []
    for read in reads:
        types, _small, parts = ingest.plan(trace, read, small_rows=-1)
        kinds = "".join("i" if t == "INTEGER" else "q" for t in types.values())
        out += [f"{kinds}\t{sql}" for sql in parts]
    return out


def percall_statements(trace) -> list[str]:
    """What the compiled per-call pass gets its values from, "<kinds><TAB><sql>": the activity (as the reader would
    read it; the analysis has DuckDB's scanner read it into memcpy_raw), then the copy calls' parts, for a file of
    any size (fuzz/run_percall.sh)."""
    memcpy = ingest.Read("memcpy", None, ["start", "end", "device_id", "stream_id", "correlation_id", "global_pid",
                                          "bytes", "copy_kind", "src_kind", "dst_kind"],
                         {c: "INTEGER" for c in ("device_id", "stream_id", "copy_kind", "src_kind", "dst_kind")})
    out = []
    for read in (memcpy, COPY_CALLS):
        types, _small, parts = ingest.plan(trace, read, small_rows=-1)
        kinds = "".join("i" if t == "INTEGER" else "q" for t in types.values())
        out += [f"{kinds}\t{sql}" for sql in parts]
    return out


def seed(src: Path, dst: Path) -> None:
    dst.unlink(missing_ok=True)
    con = sqlite3.connect(dst)
    con.execute("PRAGMA page_size = 512")
    con.execute(f"ATTACH 'file:{src}?mode=ro' AS s")
    for table, rows in TABLES.items():
        ddl = con.execute("SELECT sql FROM s.sqlite_master WHERE name = ?", (table,)).fetchone()
        if ddl:
            con.execute(ddl[0])
            con.execute(f'INSERT INTO "{table}" SELECT * FROM s."{table}" LIMIT {rows}')
    con.commit()
    con.execute("DETACH s")
    con.execute("VACUUM")
    con.close()


def main(out: str) -> None:
    out = Path(out)
    (out / "corpus").mkdir(parents=True, exist_ok=True)
    for i, s in enumerate(SEEDS):
        seed(REPO / s, out / "corpus" / f"seed-{i}.sqlite")
    with Trace.open(str(REPO / SEEDS[0]), use_cache=False) as t:
        (out / "statements.txt").write_text("\n".join(statements(t)) + "\n")
        (out / "percall_statements.txt").write_text("\n".join(percall_statements(t)) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
