"""Read the big activity tables of an export into DuckDB, fast: in parallel, filtered inside SQLite.

An nsys export has no index on the columns we filter by, so every read is a full table scan, and
on multi-GB files that scan is most of the cost of an analysis. Measured on a 1.36 GB export
(20 M runtime rows, 2 cores; docs/benchmarks.md): DuckDB's sqlite scanner cannot push a filter
into SQLite and converts every column of every row (2.8 s for the 2 M memcpy calls among 20 M
rows); its `sqlite_query` pushes the filter down but returns only text (2.0 s). ADBC's SQLite
driver runs the filter inside SQLite and hands back typed Arrow columns for the matching rows
only; one connection per rowid range on one thread each (SQLite releases the GIL) makes it 1.0 s.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote

from .errors import BadInput, first_line

MIN_ROWS_PER_PART = 200_000
BATCH_ROWS = 122_880  # one DuckDB row group


def _workers(threads: int | None) -> int:
    return max(1, min(threads or os.cpu_count() or 1, 8))


def _connect(path: str):
    import adbc_driver_sqlite.dbapi as adbc

    # mode=ro: SQLite never writes to or beside the user's file (no journal, no -wal).
    return adbc.connect(f"file:{quote(os.path.abspath(path))}?mode=ro")


def read_table(trace, view: str, into: str, where: str | None = None, types: dict | None = None,
               columns: list[str] | None = None) -> int:
    """Make `into` (an Arrow table registered in DuckDB; `release` drops it) hold the normalized
    columns of `view` (see trace.VIEWS) for the rows of its SQLite table that satisfy `where`
    (SQLite syntax, evaluated inside SQLite). Only `columns` (default: all), int64 unless `types`
    says int32; columns the file lacks are NULL. Returns the number of rows read."""
    import pyarrow as pa

    table, cols = trace.source_columns(view)
    if columns:
        cols = {c: cols[c] for c in columns}
    names = list(cols)
    schema = pa.schema([(c, pa.int32() if (types or {}).get(c) == "INTEGER" else pa.int64()) for c in names])
    got = []
    if table is not None:
        exprs = ", ".join(f'"{src}" AS "{out}"' if src else f'NULL AS "{out}"' for out, src in cols.items())
        cond = f" AND ({where})" if where else ""
        try:
            # Two subqueries: SQLite answers each from the b-tree's ends; min() and max() in one
            # SELECT scan the whole table.
            bounds = _query(trace.path, f'SELECT (SELECT min(rowid) FROM "{table}") AS lo, '
                                        f'(SELECT max(rowid) FROM "{table}") AS hi').to_pylist()[0]
            lo, hi = bounds["lo"], bounds["hi"]
            if lo is not None:
                workers = _workers(trace.threads)
                n_parts = max(1, min(workers, (hi - lo + 1) // MIN_ROWS_PER_PART))
                step = (hi - lo) // n_parts + 1
                sqls = [f'SELECT {exprs} FROM "{table}" WHERE rowid BETWEEN {lo + i * step} AND '
                        f"{min(hi, lo + (i + 1) * step - 1)}{cond}" for i in range(n_parts)]
                with ThreadPoolExecutor(n_parts) as pool:
                    got = list(pool.map(lambda q: _query(trace.path, q), sqls))
        except Exception as e:  # the ADBC driver raises its own error classes
            raise BadInput(f"{trace.path}: cannot read table {table} ({first_line(e)})") from None
    frames = []
    for t in got:
        # Every column read this way is an integer; a part whose column is all NULL comes back untyped.
        try:
            frames.append(pa.table([t.column(i).cast(schema.field(i).type) for i in range(len(names))],
                                   schema=schema))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise BadInput(f"{trace.path}: table {table} holds non-integer values where nsys writes "
                           "integers (a damaged export?)") from None
    data = pa.concat_tables(frames) if frames else schema.empty_table()
    del got, frames
    pa.default_memory_pool().release_unused()  # the uncast parts: give their pages back now
    # DuckDB scans the Arrow table in place: no second copy of the rows.
    trace.arrow[into] = data
    trace.con.register(into, data)
    return data.num_rows


def release(trace, name: str) -> None:
    """Drop an Arrow table that read_table registered."""
    trace.con.unregister(name)
    trace.arrow.pop(name, None)


def _query(path: str, sql: str):
    con = _connect(path)
    try:
        cur = con.cursor()
        try:
            # Large batches: DuckDB pays a fixed cost per Arrow batch it scans (the default is 1024 rows).
            cur.adbc_statement.set_options(**{"adbc.sqlite.query.batch_rows": str(BATCH_ROWS)})
            cur.execute(sql)
            return cur.fetch_arrow_table()
        finally:
            cur.close()
    finally:
        con.close()
