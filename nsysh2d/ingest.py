"""Read the big activity tables of an export, fast: in parallel, filtered inside SQLite, in parts.

An nsys export has no index on the columns we filter by, so every read is a full table scan, and
on multi-GB files that scan is most of the cost of an analysis. Measured on a 1.36 GB export
(20 M runtime rows, 2 cores; docs/benchmarks.md): DuckDB's sqlite scanner cannot push a filter
into SQLite and converts every column of every row (2.8 s for the 2 M memcpy calls among 20 M
rows); its `sqlite_query` pushes the filter down but returns only text (2.0 s). ADBC's SQLite
driver runs the filter inside SQLite and hands back typed Arrow columns for the matching rows
only; one connection per rowid range on one thread each (SQLite releases the GIL) makes it 1.0 s.
`read_parts` hands the ranges over one by one, so a caller can compress each before the next
arrives (analysis.py) instead of holding every raw row at once.
"""
from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import quote

from .errors import BadInput, first_line

MIN_ROWS_PER_PART = 200_000
BATCH_ROWS = 122_880  # one DuckDB row group


def _workers(threads: int | None) -> int:
    return max(1, min(threads or os.cpu_count() or 1, 8))


@dataclass
class Read:
    """One table to read: the normalized columns of `view` (see trace.VIEWS) for the rows of its
    SQLite table that satisfy `where` (SQLite syntax, evaluated inside SQLite). Only `columns`
    (default: all), int64 unless `types` says int32 (INTEGER); columns the file lacks are NULL.
    `part_rows`: source rows per part at most (default: one part per thread)."""
    view: str
    where: str | None = None
    columns: list[str] | None = None
    types: dict = field(default_factory=dict)
    part_rows: int | None = None


def read_parts(trace, reads: list[Read]) -> "Parts":
    """The rowid-range parts of the tables, read on a pool of threads (see Parts)."""
    return Parts(trace, reads)


class Parts:
    """Iterator of (index into `reads`, Arrow table) for every rowid-range part of every table, in
    order: all parts of reads[0] first, each table's parts in rowid order. Reading starts at once, on
    a pool of threads (one SQLite connection each; SQLite releases the GIL), and stays one part per
    thread ahead of the consumer: memory holds only the parts in flight while the caller works on
    earlier ones, or on something else before it asks for the first. Use as a context manager (or
    call close()) so that an early exit stops the reads."""

    def __init__(self, trace, reads: list[Read]):
        self.trace, self.reads = trace, reads
        self.todo = iter([(k, _table(trace, r), sql) for k, r in enumerate(reads) for sql in _part_sqls(trace, r)])
        self.workers = _workers(trace.threads)
        self.pool = ThreadPoolExecutor(self.workers)
        self.pending: deque = deque()
        self._fill()

    def _fill(self) -> None:
        while len(self.pending) < self.workers:
            nxt = next(self.todo, None)
            if nxt is None:
                return
            k, table, sql = nxt
            self.pending.append((k, table, self.pool.submit(_query, self.trace.path, sql)))

    def __iter__(self):
        return self

    def __next__(self):
        if not self.pending:
            self.close()
            raise StopIteration
        k, table, fut = self.pending.popleft()
        with _bad_table(self.trace, table):
            got = fut.result()
        self._fill()
        return k, _typed(self.trace, self.reads[k], table, got)

    def close(self) -> None:
        for _k, _t, fut in self.pending:
            fut.cancel()
        self.pending.clear()
        self.todo = iter(())
        self.pool.shutdown(wait=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _table(trace, r: Read) -> str | None:
    return trace.source_columns(r.view)[0]


def _columns(trace, r: Read) -> dict:
    cols = trace.source_columns(r.view)[1]
    return {c: cols[c] for c in r.columns} if r.columns else cols


def _schema(r: Read, names: list[str]):
    import pyarrow as pa

    return pa.schema([(c, pa.int32() if r.types.get(c) == "INTEGER" else pa.int64()) for c in names])


def _part_sqls(trace, r: Read) -> list[str]:
    table = _table(trace, r)
    if table is None:
        return []
    cols = _columns(trace, r)
    exprs = ", ".join(f'"{src}" AS "{out}"' if src else f'NULL AS "{out}"' for out, src in cols.items())
    cond = f" AND ({r.where})" if r.where else ""
    with _bad_table(trace, table):
        # Two subqueries: SQLite answers each from the b-tree's ends; min() and max() in one
        # SELECT scan the whole table.
        bounds = _query(trace.path, f'SELECT (SELECT min(rowid) FROM "{table}") AS lo, '
                                    f'(SELECT max(rowid) FROM "{table}") AS hi').to_pylist()[0]
    lo, hi = bounds["lo"], bounds["hi"]
    if lo is None:
        return []
    rows = hi - lo + 1
    n_parts = _workers(trace.threads)
    if r.part_rows:
        n_parts = max(n_parts, -(-rows // r.part_rows))
    n_parts = max(1, min(n_parts, rows // MIN_ROWS_PER_PART))
    step = (hi - lo) // n_parts + 1
    return [f'SELECT {exprs} FROM "{table}" WHERE rowid BETWEEN {lo + i * step} AND '
            f"{min(hi, lo + (i + 1) * step - 1)}{cond}" for i in range(n_parts)]


def _typed(trace, r: Read, table: str, t):
    """The part with the declared integer types (a part whose column is all NULL comes back untyped)."""
    import pyarrow as pa

    names = list(_columns(trace, r))
    schema = _schema(r, names)
    try:
        return pa.table([t.column(i).cast(schema.field(i).type) for i in range(len(names))], schema=schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise BadInput(f"{trace.path}: table {table} holds non-integer values where nsys writes "
                       "integers (a damaged export?)") from None


@contextmanager
def _bad_table(trace, table: str):
    try:
        yield
    except BadInput:
        raise
    except Exception as e:  # the ADBC driver raises its own error classes
        raise BadInput(f"{trace.path}: cannot read table {table} ({first_line(e)})") from None


def _query(path: str, sql: str):
    """The result of one SQLite query as an Arrow table, through ADBC's driver manager directly: its
    DB-API module imports polars when it is installed (0.15 s of start-up for nothing)."""
    import adbc_driver_manager as adbc
    import adbc_driver_sqlite
    import pyarrow as pa

    # mode=ro: SQLite never writes to or beside the user's file (no journal, no -wal).
    with adbc_driver_sqlite.connect(f"file:{quote(os.path.abspath(path))}?mode=ro") as db, \
            adbc.AdbcConnection(db) as con, adbc.AdbcStatement(con) as stmt:
        # Large batches: DuckDB pays a fixed cost per Arrow batch it scans (the default is 1024 rows).
        stmt.set_options(**{"adbc.sqlite.query.batch_rows": str(BATCH_ROWS)})
        stmt.set_sql_query(sql)
        stream, _rows = stmt.execute_query()
        return pa.RecordBatchReader.from_stream(stream).read_all()
