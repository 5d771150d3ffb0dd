"""An nsys export's copy-call stacks, as the model asks its Trace for them (inputs.NsysSqlite; docs/architecture.md:
the input adapters; Kineto's are kineto.py's).

Python stacks: nsys records them as NVTX marks whose binary payload the standard library's sqlite3 reads (DuckDB's
scanner rejects the blobs nsys stores in a TEXT column). Native
stacks (CUDA backtraces): nsys's CUDA_CALLCHAINS, filtered inside SQLite by the calls' stack ids; DuckDB's scanner
converted every row of the table first (51 k rows: 40 ms of a 0.55 s report; a long capture holds millions).
"""
from __future__ import annotations

# SQL in Python: reads of the file through the standard library's sqlite3, column names from schema.VIEWS and the
# domain ids (integers) of the marks; the stack ids reach SQLite as one JSON parameter.

import html
import json

from . import sql
from .file_checks import read_only
from .ingest import bad_table, not_integers
from .python_backtrace import decode_python_frames


def python_stacks(trace, marks: list[tuple]) -> tuple[list[tuple], dict]:
    """([(global_pid, correlation_id, stack key)], {key: [(function, file, line)], innermost first}) of the copy
    calls. nsys: the decoded Python-backtrace payloads of `marks` (model/python_marks.sql rows)."""
    blobs = nvtx_blobs(trace, sorted({m[4] for m in marks})) if marks else {}
    decoded = {blob: decode_python_frames(blob) for blob in set(blobs.values())}
    ids = sorted({i for fr in decoded.values() for f in fr for i in (f[0], f[1])})
    strings = dict(sql.run(trace.con, "source/strings_by_id", {"ids": ids}).fetchall()) if ids else {}
    frames = {blob: [(html.unescape(strings.get(a, "?")), html.unescape(strings.get(b, "?")), ln)
                     for a, b, ln in fr] for blob, fr in decoded.items()}
    calls = [(p, c, blobs[(t, st)]) for p, c, t, st, _d in marks if (t, st) in blobs]
    return calls, frames


def nvtx_blobs(trace, domain_ids: list[int]) -> dict[tuple[int, int], bytes]:
    """NVTX extended payloads of marks in the given domains, keyed by (globalTid, start)."""
    if not domain_ids or "binaryData" not in trace.tables.get("NVTX_EVENTS", set()):
        return {}
    with read_only(trace.path) as con:
        marks = ",".join(str(int(d)) for d in domain_ids)
        rows = con.execute("SELECT globalTid, start, binaryData FROM NVTX_EVENTS "
                           f"WHERE domainId IN ({marks}) AND binaryData IS NOT NULL AND end IS NULL")
        return {(t, s): b if isinstance(b, bytes) else str(b).encode("latin-1", "replace") for t, s, b in rows}


def native_stacks(trace) -> list[tuple]:
    """[(callchain_id, depth, symbol, module)] of the copy calls' native stacks, by id and depth (NULL depths last),
    as model/callchain_frames.sql gives them (Kineto's path, and the reference the tests compare with)."""
    table, cols = trace.source_columns("callchains")
    ids = [i for (i,) in sql.run(trace.con, "model/callchain_ids").fetchall()]
    if table is None or not ids or not cols["id"]:
        return []
    exprs = ", ".join(f'"{cols[c]}"' if cols[c] else "NULL" for c in ("id", "depth", "symbol", "module"))
    with bad_table(trace, table), read_only(trace.path) as con:
        rows = con.execute(f'SELECT {exprs} FROM "{table}" NOT INDEXED WHERE "{cols["id"]}" IN '
                           "(SELECT value FROM json_each(?))", (json.dumps(ids),)).fetchall()
    if any(not isinstance(v, int) for r in rows for v in r if v is not None):
        raise not_integers(trace, table)
    names = sorted({v for r in rows for v in r[2:] if v is not None})
    strings = dict(sql.run(trace.con, "source/strings_by_id", {"ids": names}).fetchall()) if names else {}
    return sorted(((i, d, strings.get(sy), strings.get(mo)) for i, d, sy, mo in rows),
                  key=lambda r: (r[0], r[1] is None, r[1] or 0))

