"""Read the big activity tables of an export, fast: in parallel, filtered inside SQLite, in parts.

An nsys export has no index on the columns we filter by, so every read is a full table scan, and
on multi-GB files that scan is most of the cost of an analysis. Measured on a 1.36 GB export
(20 M runtime rows, 2 cores; docs/benchmarks.md): DuckDB's sqlite scanner cannot push a filter
into SQLite and converts every column of every row (2.8 s for the 2 M memcpy calls among 20 M
rows); its `sqlite_query` pushes the filter down but returns only text (2.0 s). ADBC's SQLite
driver runs the filter inside SQLite and hands back typed Arrow columns for the matching rows
only; one connection per rowid range on one thread each (SQLite releases the GIL) makes it 1.0 s.
The compiled reader (_sqlite_ints.c) runs the same statements and fills the columns itself, where it was
built (ADBC otherwise): the same speed (benchmarks/readers.py), the base of issue 38's compiled pass.
`Parts` hands the ranges over one by one, so a caller can compress each before the next
arrives (analysis.py) instead of holding every raw row at once.

A small table (SMALL_ROWS rows at most: the CI-sized exports) is read in one part by DuckDB itself, through
the attached file's `sqlite_query` (the same statement, run inside SQLite): no thread, no ADBC and no Arrow,
whose import and DuckDB's first Arrow scan (pyarrow.dataset) cost ~0.15 s of a ~1 s cold report.
"""
from __future__ import annotations

# SQL in Python: SQLite statements per rowid range, built from schema.VIEWS' column map and integer bounds; for a
# small table, DuckDB's statement around it (the columns' casts), the SQLite statement passed as a parameter.

import itertools
import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from ..cpus import MAX_THREADS, analysis_threads
from ..errors import BadInput, first_line
from .file_checks import read_only, read_only_uri
from .schema import column_expr

MIN_ROWS_PER_PART = 200_000
# Parts are planned from the rowid span, which a damaged or edited file can stretch to 2^64 for a few rows:
# never more parts than this (an empty range costs one quick query).
MAX_PARTS = 256
BATCH_ROWS = 122_880  # one DuckDB row group
# sqlite_query hands DuckDB text (cast back here): cheaper than starting ADBC and Arrow for a few thousand rows,
# dearer per row (ingest of 20 M rows: 2.0 s against 1.0 s). A table up to this many rows is read that way.
SMALL_ROWS = 50_000
_SMALL_TABLES = itertools.count()


def _workers(threads: int | None) -> int:
    return max(1, min(threads or analysis_threads(), MAX_THREADS))


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


def plan(trace, read: Read, small_rows: int | None = None) -> tuple[dict[str, str], str | None, list[str]]:
    """What reading `read` runs: (each column's integer type, the one statement of a small table or None, the
    statements of the parts of a larger one). small_rows: SMALL_ROWS unless given (fuzz/make_inputs.py asks for
    the parts' statements of a small file)."""
    table, cols = trace.source_columns(read.view)
    exprs = {out: column_expr(cols[out], out, "sqlite") if cols[out] else f'NULL AS "{out}"'
             for out in read.columns or cols}
    types = {c: "INTEGER" if read.types.get(c) == "INTEGER" else "BIGINT" for c in exprs}
    select = ", ".join(exprs.values())
    if table is None:
        return types, None, []
    with bad_table(trace, table):
        lo, hi = _bounds(trace.path, table)
    if lo is None:
        return types, None, []
    # NOT INDEXED: rows found through an index the file brings along could disagree with its table (an
    # edited file hiding copies); rowid ranges still use the table's own b-tree.
    rows = hi - lo + 1
    if rows <= (SMALL_ROWS if small_rows is None else small_rows):
        return types, f'SELECT {select} FROM "{table}" NOT INDEXED WHERE ({read.where or 1})', []
    cond = f" AND ({read.where})" if read.where else ""
    n_parts = _workers(trace.threads)
    if read.part_rows:
        n_parts = max(n_parts, -(-rows // read.part_rows))
    n_parts = max(1, min(n_parts, rows // MIN_ROWS_PER_PART, MAX_PARTS))
    step = (hi - lo) // n_parts + 1
    return types, None, [f'SELECT {select} FROM "{table}" NOT INDEXED WHERE rowid BETWEEN {lo + i * step} AND '
                         f"{min(hi, lo + (i + 1) * step - 1)}{cond}" for i in range(n_parts)]


class Parts:
    """Iterator of the Arrow tables of a Read, one per rowid range, in rowid order. Reading starts at
    once, on a pool of threads (one SQLite connection each; SQLite releases the GIL), and stays one
    part per thread ahead of the consumer: memory holds only the parts in flight while the caller
    works on earlier ones, or on something else before it asks for the first. Use as a context
    manager (or call close()) so that an early exit stops the reads."""

    def __init__(self, trace, read: Read):
        self.trace = trace
        self.table = trace.source_columns(read.view)[0]
        # small: the one statement of a small table, read by DuckDB in __next__; else one per part, by threads
        self.types, self.small, parts = plan(trace, read)
        self.todo = iter(parts)
        self.workers = _workers(trace.threads)
        self.pool = None if self.small else ThreadPoolExecutor(self.workers)
        self.pending: deque = deque()
        self._fill()

    def _fill(self) -> None:
        while self.pool and len(self.pending) < self.workers:
            sql = next(self.todo, None)
            if sql is None:
                return
            self.pending.append(self.pool.submit(_query, self.trace.path, sql, self.types))

    def __iter__(self):
        return self

    def __next__(self):
        if self.small:
            sql, self.small = self.small, None
            return self._read_small(sql)
        if not self.pending:
            self.close()
            raise StopIteration
        fut = self.pending.popleft()
        with bad_table(self.trace, self.table):
            try:
                got = fut.result()
            except NotIntegers:
                raise not_integers(self.trace, self.table) from None
        self._fill()
        return self._typed(got)

    def _typed(self, t):
        """The part with the declared integer types (a part whose column is all NULL comes back untyped)."""
        import pyarrow as pa   # lazy: a small table's read never loads Arrow (~0.15 s of a cold report)

        schema = pa.schema([(c, pa.int32() if t == "INTEGER" else pa.int64()) for c, t in self.types.items()])
        try:
            return pa.table([t.column(i).cast(f.type) for i, f in enumerate(schema)], schema=schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise not_integers(self.trace, self.table) from None

    def _read_small(self, sqlite_sql: str):
        """The whole (small) table's matching rows as a DuckDB relation over a temporary table: the statement
        runs inside SQLite (sqlite_query), its text cast back to the declared integer types."""
        import duckdb   # lazy: fuzz/make_inputs.py plans reads without DuckDB

        # A name of its own, never reused: relations of earlier parts still read their tables (id(self) is
        # reused once a Parts is freed, and a CREATE OR REPLACE then swapped kernels for memsets).
        con, name = self.trace.con, f"small_part_{next(_SMALL_TABLES)}"
        cols = ", ".join(f'CAST("{c}" AS {t}) AS "{c}"' for c, t in self.types.items())
        try:
            con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT {cols} FROM sqlite_query('src', $sql)",
                        {"sql": sqlite_sql})
        except duckdb.ConversionException:
            raise not_integers(self.trace, self.table) from None
        except duckdb.Error as e:
            raise BadInput(f"{self.trace.path}: cannot read table {self.table} ({first_line(e)})") from None
        return con.table(name)

    def close(self) -> None:
        for fut in self.pending:
            fut.cancel()
        self.pending.clear()
        self.todo = iter(())
        self.small = None
        if self.pool:
            self.pool.shutdown(wait=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@contextmanager
def bad_table(trace, table: str):
    """Any error reading `table` as one BadInput line naming the file and table."""
    try:
        yield
    except BadInput:
        raise
    except Exception as e:  # the ADBC driver raises its own error classes
        raise BadInput(f"{trace.path}: cannot read table {table} ({first_line(e)})") from None


def not_integers(trace, table: str) -> BadInput:
    """The error of a table holding values that are not the integers nsys writes there."""
    return BadInput(f"{trace.path}: table {table} holds non-integer values where nsys writes integers "
                    "(a damaged export?)")


def _bounds(path: str, table: str) -> tuple[int | None, int | None]:
    """(min, max) rowid of a table, through the standard library's sqlite3 (read-only, nothing written beside
    the file). Two subqueries: SQLite answers each from the b-tree's ends; min() and max() in one SELECT scan
    the whole table."""
    with read_only(path) as con:
        return con.execute(f'SELECT (SELECT min(rowid) FROM "{table}"), (SELECT max(rowid) FROM "{table}")').fetchone()


def _query(path: str, sql: str, types: dict[str, str]):
    """The result of one SQLite query (integer columns named by `types`) as an Arrow table: through the compiled
    reader (_sqlite_ints.c: the GIL released for the whole query) when it was built, else ADBC's driver."""
    reader = compiled_reader()
    if reader is None:
        return _query_adbc(path, sql)
    import pyarrow as pa   # lazy: as in Parts._typed

    try:
        rows, cols = reader.read_columns(read_only_uri(path), sql,
                                         "".join("i" if t == "INTEGER" else "q" for t in types.values()))
    except reader.NotIntegerError:
        raise NotIntegers() from None
    arrays = [pa.Array.from_buffers(pa.int32() if t == "INTEGER" else pa.int64(), rows,
                                    [None if valid is None else pa.py_buffer(valid), pa.py_buffer(data)], nulls)
              for (data, valid, nulls), t in zip(cols, types.values())]
    return pa.table(arrays, names=list(types))


class NotIntegers(ValueError):
    """A value the compiled reader refused (Parts names the table in the error the user sees)."""


def compiled_reader():
    """The compiled reader module, or None where the install could not build it (setup.py says what it needs).
    NSYSH2D_READER=adbc picks ADBC's driver anyway (the differential tests compare the two)."""
    if os.environ.get("NSYSH2D_READER") == "adbc":
        return None
    try:
        from . import _sqlite_ints   # lazy: optional (an install without a C compiler reads through ADBC)
    except ImportError:
        return None
    return _sqlite_ints


def _query_adbc(path: str, sql: str):
    """The result of one SQLite query as an Arrow table, through ADBC's driver manager directly: its
    DB-API module imports polars when it is installed (0.15 s of start-up for nothing)."""
    import adbc_driver_manager as adbc   # lazy: the fallback reader's (compiled_reader)
    import adbc_driver_sqlite   # lazy: as adbc_driver_manager
    import pyarrow as pa   # lazy: as in Parts._typed

    with adbc_driver_sqlite.connect(read_only_uri(path)) as db, \
            adbc.AdbcConnection(db) as con, adbc.AdbcStatement(con) as stmt:
        # Large batches: DuckDB pays a fixed cost per Arrow batch it scans (the default is 1024 rows).
        stmt.set_options(**{"adbc.sqlite.query.batch_rows": str(BATCH_ROWS)})
        stmt.set_sql_query(sql)
        stream, _rows = stmt.execute_query()
        return pa.RecordBatchReader.from_stream(stream).read_all()


def spans_condition(spans: list[tuple[int, int]], bucket_bits: int = 20, max_buckets: int = 4096) -> str:
    """SQLite condition: the row ("start", "end") overlaps one of the spans [lo, hi) ("end" >= lo AND
    start < hi). The exact test is an OR over the spans, which SQLite evaluates term by term on every
    row (10 spans over 5 M kernels: 1.17 s against 0.25 s for one comparison). A cheaper test goes first
    and lets through only the rows that can pass: those whose end falls in a time bucket of 2^k ns that
    touches [lo, hi + 2^k) of some span (one lookup in a sorted list), and the rows longer than 2^k,
    which can overlap a span and end well after it (0.55 s for the same scan)."""
    if not spans:
        return "0"
    exact = " OR ".join(f'("end" >= {lo} AND start < {hi})' for lo, hi in spans)
    k = bucket_bits
    while k < 62 and sum(b - a + 1 for a, b in _bucket_ranges(spans, k)) > max_buckets:
        k += 1
    buckets = [str(x) for a, b in _bucket_ranges(spans, k) for x in range(a, b + 1)]
    return f'(("end" >> {k}) IN ({", ".join(buckets)}) OR "end" - start > {1 << k}) AND ({exact})'


def _bucket_ranges(spans: list[tuple[int, int]], k: int) -> list[tuple[int, int]]:
    """The buckets of 2^k that the spans' [lo, hi + 2^k] touch, as sorted disjoint inclusive ranges."""
    out: list[tuple[int, int]] = []
    for a, b in sorted((lo >> k, (hi + (1 << k)) >> k) for lo, hi in spans):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out
