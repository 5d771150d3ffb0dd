"""A trace opened in DuckDB with the normalized views of schema.py, whatever its format: inputs.py's adapter of
the format fills it (Trace.open) and serves what the model asks of it; open_input is the one opener that also
closes it.

An nsys export is attached through DuckDB's sqlite scanner (shipped on PyPI for DuckDB 1.5.5, since
extensions cannot be downloaded at run time), opened READ_ONLY: nothing is ever written to or
beside the user's file.
"""
from __future__ import annotations

# SQL in Python: the connection's set-up (LOAD, ATTACH with the path quoted by _sql_string), the file's own
# view list (the scanner lists tables only; stacks.py reads the stack tables), and the
# tables of Trace.frame and of small gpu_work (their column names and types are this module's constants).

import json
import os
import shutil
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass, field

import duckdb

from ..cpus import analysis_threads
from ..errors import BadInput, first_line
from . import ingest, schema, sql
from .connection import duckdb_config, spill_folder, sqlite_extension_path
from .file_checks import read_only
from .files import damage_is_bad_input
from .inputs import TraceInput, input_for

PART_ROWS = 250_000  # copy calls per part added to the store: bounds the memory of what is in flight
FRAME_ROWS = 20_000   # Trace.frame: rows handed over as JSON text, not Arrow
SQL_TYPES = {"int32": "INTEGER", "int64": "BIGINT", "string": "VARCHAR"}
# What an nsys export's copy calls are read as (Trace.copy_calls; fuzz/make_inputs.py fuzzes the same statements).
COPY_CALLS = ingest.Read(
    "runtime", sql.condition("source/sqlite_copy_calls"),
    ["start", "end", "event_class", "global_tid", "correlation_id", "name_id", "callchain_id"],
    {"event_class": "INTEGER", "name_id": "INTEGER"},
    # About one runtime row in ten is an async memcpy in the exports measured: parts of 10x the rows.
    part_rows=10 * PART_ROWS)

@dataclass
class Trace:
    path: str
    con: duckdb.DuckDBPyConnection
    tables: dict[str, set[str]]
    warnings: list[str] = field(default_factory=list)
    # What contradicts itself in the file (ENUM labels against CUPTI's ids, one id with two names): the
    # figures may be wrong in the file's favour, so the gate cannot pass it (docs/security.md).
    inconsistencies: list[str] = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    threads: int | None = None
    source: str = ""   # what the user named: the .nsys-rep when `path` is its export in the cache
    spill: str | None = None   # this run's own spill folder (removed on close)
    own_export: str | None = None   # the folder of a --no-cache export or private copy (removed on close)
    format: str = "nsys-sqlite"   # the name of the adapter that filled n.*: nsys-sqlite or kineto
    input: TraceInput | None = None   # that adapter (inputs.py): what the model asks of a trace goes through it

    @classmethod
    def open(cls, path: str, nsys: str | None = None, threads: int | None = None, use_cache: bool = True) -> "Trace":
        """use_cache=False (--no-cache): a .nsys-rep is exported anew, to a folder removed on close. The adapter of
        the trace's format (inputs.input_for) fills a Trace of this class."""
        return input_for(str(path)).open(cls, nsys, threads, use_cache)

    @classmethod
    def connect(cls, path: str, source: str, threads: int | None, adapter, sqlite: bool = False) -> "Trace":
        """A Trace on its own in-memory DuckDB (and spill folder) for `adapter` to fill; sqlite: with the SQLite
        file at `path` attached READ_ONLY and the views n.* built over it (its format, metadata and warnings)."""
        if threads is None:
            threads = analysis_threads()
        spill = spill_folder()
        con = None
        try:
            config = duckdb_config(threads, spill)
            if sqlite and os.environ.get("NSYSH2D_TIMING"):
                # one write: the workers of `analyze -j N` share the stderr, and print() writes in pieces
                os.write(2, f"nsysh2d: threads {threads}, DuckDB memory limit {config['memory_limit']}\n".encode())
            con = duckdb.connect(":memory:", config={**config, "allow_unsigned_extensions": True} if sqlite else config)
            tr = cls(path, con, {}, threads=threads, source=source, spill=spill, format=adapter.name, input=adapter)
            if sqlite:
                tr._attach()
            return tr
        except BaseException:
            if con is not None:
                con.close()
            shutil.rmtree(spill, ignore_errors=True)
            raise

    def _attach(self) -> None:
        con, path = self.con, self.path
        # The extension is the pinned PyPI package's own file, loaded by its path inside site-packages:
        # checking its signature hashes all 34 MB of it in every process (45 ms of each cold run), so
        # the check is off for this one LOAD and back on before anything else runs on the connection.
        con.execute(f"LOAD '{sqlite_extension_path()}'")
        con.execute("SET allow_unsigned_extensions = false")
        try:
            con.execute(f"ATTACH {_sql_string(path)} AS src (TYPE sqlite, READ_ONLY)")
            rows = con.execute("SELECT table_name, column_name, data_type FROM information_schema.columns "
                               "WHERE table_catalog = 'src'").fetchall()
        except duckdb.Error as e:
            if "locked" in str(e).lower() or "busy" in str(e).lower():
                raise BadInput(f"{path}: locked by another process (is nsys export still writing it?)") from None
            raise BadInput(f"{path}: cannot read as SQLite ({first_line(e)})") from None
        blobs = set()
        for t, c, typ in rows:
            self.tables.setdefault(t, set()).add(c)
            if typ == "BLOB":   # the scanner's type for a column declared without a type
                blobs.add((t, c))
        schema.check_typed(path, self.tables, blobs)
        schema.build_views(con, path, self.tables, self.warnings, _sqlite_views(path), self.inconsistencies)
        self.meta = schema.read_meta(con)

    # ------------------------------------------------------------------ what the model asks of an input
    def copy_calls(self):
        """The copy API calls' runtime rows, as Arrow parts (a context manager), reading from now on."""
        return self.input.copy_calls(self)

    def gpu_work(self):
        """Kernels, memsets and graph replays overlapping the spans of table work_spans (device_id, stream_id: int32;
        start, end, correlation_id, global_pid, name_id: a kernel's name), as one Arrow table, or as a DuckDB
        relation when each table was small enough for DuckDB to read itself (ingest.py)."""
        return self.input.gpu_work(self)

    def sqlite_copy_calls(self):
        """copy_calls of an attached export: filtered inside SQLite, in parts (ingest.Parts)."""
        return ingest.Parts(self, COPY_CALLS)

    def sqlite_gpu_work(self):
        """gpu_work of an attached export: the span condition runs inside SQLite, so the full scan stays in its C loop
        and only the matching rows cross into DuckDB (5 M kernel rows: ~0.3 s, against ~1 s through DuckDB's
        scanner, which converts every row first)."""
        spans = self.con.execute("SELECT lo, hi FROM work_spans").fetchall()
        where = ingest.spans_condition([(int(lo), int(hi)) for lo, hi in spans])
        cols = ["device_id", "stream_id", "start", "end", "correlation_id", "global_pid", "name_id"]
        parts = []
        for view in ("kernel", "memset", "graph"):
            with ingest.Parts(self, ingest.Read(view, where, cols, {"device_id": "INTEGER", "stream_id": "INTEGER"})) as read:
                parts.extend(read)
        if all(isinstance(p, duckdb.DuckDBPyRelation) for p in parts):   # small tables: DuckDB's own (ingest.py)
            out = self.con.sql('SELECT NULL::INTEGER AS device_id, NULL::INTEGER AS stream_id, NULL::BIGINT AS start, '
                               'NULL::BIGINT AS "end", NULL::BIGINT AS correlation_id, NULL::BIGINT AS global_pid, '
                               'NULL::BIGINT AS name_id WHERE false')   # the columns, when no table has rows
            for p in parts:
                out = out.union(p)
            return out
        import pyarrow as pa   # lazy: a small export's report never loads Arrow (ingest.py)

        return pa.concat_tables([p.arrow().read_all() if isinstance(p, duckdb.DuckDBPyRelation) else p for p in parts])

    def frame(self, name: str, cols: list[str], types: list[str], rows: list[tuple]) -> None:
        """Rows computed in Python as the DuckDB table `name` (types: int32, int64, string). Up to FRAME_ROWS rows
        as one statement over a JSON text per column, with no Arrow (ingest.py: what Arrow costs a small report;
        DuckDB's list parameters would cost ~70 us a value); more through Arrow, faster per row."""
        if len(rows) <= FRAME_ROWS:
            sel = ", ".join(f"unnest(from_json($c{i}, '[\"{SQL_TYPES[t]}\"]')) AS \"{c}\""
                            for i, (c, t) in enumerate(zip(cols, types)))
            self.con.execute(f'CREATE OR REPLACE TEMP TABLE "{name}" AS SELECT {sel}',
                             {f"c{i}": json.dumps([r[i] for r in rows]) for i in range(len(cols))})
            return
        import pyarrow as pa   # lazy: as in sqlite_gpu_work

        self.con.register(name, pa.table([pa.array([r[i] for r in rows], type=getattr(pa, t)())
                                          for i, t in enumerate(types)], names=cols))

    def python_stacks(self, marks: list[tuple]) -> tuple[list[tuple], dict]:
        """([(global_pid, correlation_id, stack key)], {key: [(function, file, line)], innermost first}) of the
        copy calls. nsys: the decoded Python-backtrace payloads of `marks` (model/python_marks.sql)."""
        return self.input.python_stacks(self, marks)

    def native_stacks(self) -> list[tuple]:
        """[(callchain_id, depth, symbol, module)] of the copy calls' native stacks (CUDA backtraces), by id and
        depth."""
        return self.input.native_stacks(self)

    def source_columns(self, view: str) -> tuple[str | None, dict[str, str | None]]:
        return schema.source_columns(self.tables, view)

    # ------------------------------------------------------------------ queries
    def run(self, name: str, params: dict | None = None):
        return sql.run(self.con, name, params)

    def rows(self, name: str, params: dict | None = None) -> list[dict]:
        return sql.rows(self.con, name, params)

    def sql(self, name: str, params: dict | None = None):
        """The named query's result as a polars DataFrame."""
        return sql.run(self.con, name, params).pl()

    def close(self) -> None:
        self.con.close()
        for folder in (self.spill, self.own_export):
            if folder:
                shutil.rmtree(folder, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _sql_string(text: str) -> str:
    """A SQL string literal (ATTACH takes no parameters)."""
    return "'" + text.replace("'", "''") + "'"


def _sqlite_views(path: str) -> set[str]:
    """Names of the file's views: the scanner lists tables only."""
    try:
        with read_only(path) as con:
            return {n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'view'")}
    except sqlite3.Error:
        return set()


@contextmanager
def open_input(path: str, nsys: str | None = None, threads: int | None = None, use_cache: bool = True):
    """The one opener: the trace at `path` opened by its format's adapter, closed when the block ends; damage in the
    file met while opening or reading it is one line of bad input naming it (files.damage_is_bad_input)."""
    with damage_is_bad_input(path):
        trace = Trace.open(path, nsys, threads, use_cache)
        try:
            yield trace
        finally:
            trace.close()
