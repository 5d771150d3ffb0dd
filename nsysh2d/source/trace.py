"""Open an nsys SQLite export read-only in DuckDB, with the normalized views of schema.py.

The export is attached through DuckDB's sqlite scanner (shipped on PyPI for DuckDB 1.5.5, since
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
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from ..errors import BadInput, NsysH2DError, first_line
from . import ingest, kineto, kineto_json, schema, sql, stacks
from .connection import duckdb_config, spill_folder, sqlite_extension_path
from .files import check_file, check_input, is_sqlite, read_only

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
    format: str = "nsys-sqlite"   # which adapter filled n.*: nsys-sqlite or kineto (docs/architecture.md)

    @classmethod
    def open(cls, path: str, nsys: str | None = None, threads: int | None = None, use_cache: bool = True) -> "Trace":
        """use_cache=False (--no-cache): a .nsys-rep is exported anew, to a folder removed on close."""
        source = path = str(path)
        note = None
        own_export = None
        check_input(path)
        if os.path.isfile(path) and not is_sqlite(path) and kineto_json.sniff(path):
            return cls._open_kineto(path, threads, use_cache)
        build = None   # a report's capture build: its export names only the exporting nsys
        if path.endswith((".nsys-rep", ".qdrep")):
            from .export import report_build, sqlite_for_report
            build = report_build(path)
            path = sqlite_for_report(path, nsys, keep=use_cache)
            own_export = None if use_cache else os.path.dirname(path)
        elif os.path.isfile(path) and is_sqlite(path):
            from .side_files import needs_private_copy, private_copy

            reason = needs_private_copy(path)
            if reason:
                path = private_copy(path, keep=use_cache)
                own_export = None if use_cache else os.path.dirname(path)
                where = "in the cache" if use_cache else "removed after the run"
                note = f"{source} {reason}: read from a private copy ({where}); nothing was written beside it"
        try:
            tr = cls._open(path, source, threads)
        except BaseException as e:
            if own_export:   # a --no-cache export is removed whatever stopped the open
                shutil.rmtree(own_export, ignore_errors=True)
            if not isinstance(e, NsysH2DError) or path == source:
                raise
            # An export that is not even SQLite (nsys wrote garbage) is not kept: the next run exports again.
            # A valid export without CUDA data stays: exporting it again would give the same.
            if note is None and not is_sqlite(path):
                Path(path).unlink(missing_ok=True)
            # Name the user's report, not only the hashed export in the cache.
            how = "exported" if note is None else "copied"
            raise NsysH2DError(str(e).replace(path, f"{source} ({how} to {path})", 1), e.exit_code) from None
        if note:
            tr.warnings.insert(0, note)
        if source.endswith((".nsys-rep", ".qdrep")):   # the export names only the nsys that exported it
            tr.meta["exported_with"] = tr.meta.get("nsys_version")
            tr.meta["nsys_version"] = build   # None: a header naming no build we can read ("nsys ?", never the exporter)
        tr.own_export = own_export
        return tr

    @classmethod
    def _open(cls, path: str, source: str, threads: int | None) -> "Trace":
        p = check_file(path)
        if threads is None:
            from ..cpus import analysis_threads
            threads = analysis_threads()
        # The extension is the pinned PyPI package's own file, loaded by its path inside site-packages:
        # checking its signature hashes all 34 MB of it in every process (45 ms of each cold run), so
        # the check is off for this one LOAD and back on before anything else runs on the connection.
        spill = spill_folder()
        try:
            return cls._connect(p, path, source, threads, spill)
        except BaseException:
            shutil.rmtree(spill, ignore_errors=True)
            raise

    @classmethod
    def _connect(cls, p: Path, path: str, source: str, threads: int, spill: str) -> "Trace":
        config = duckdb_config(threads, spill)
        if os.environ.get("NSYSH2D_TIMING"):
            # one write: the workers of `analyze -j N` share the stderr, and print() writes in pieces
            os.write(2, f"nsysh2d: threads {threads}, DuckDB memory limit {config['memory_limit']}\n".encode())
        con = duckdb.connect(":memory:", config={**config, "allow_unsigned_extensions": True})
        con.execute(f"LOAD '{sqlite_extension_path()}'")
        con.execute("SET allow_unsigned_extensions = false")
        try:
            con.execute(f"ATTACH {_sql_string(str(p))} AS src (TYPE sqlite, READ_ONLY)")
            rows = con.execute("SELECT table_name, column_name, data_type FROM information_schema.columns "
                               "WHERE table_catalog = 'src'").fetchall()
        except duckdb.Error as e:
            if "locked" in str(e).lower() or "busy" in str(e).lower():
                raise BadInput(f"{path}: locked by another process (is nsys export still writing it?)") from None
            raise BadInput(f"{path}: cannot read as SQLite ({first_line(e)})") from None
        tables: dict[str, set[str]] = {}
        blobs = set()
        for t, c, typ in rows:
            tables.setdefault(t, set()).add(c)
            if typ == "BLOB":   # the scanner's type for a column declared without a type
                blobs.add((t, c))
        schema.check_typed(str(p), tables, blobs)
        tr = cls(str(p), con, tables, threads=threads, source=source, spill=spill)
        schema.build_views(con, tr.path, tables, tr.warnings, _sqlite_views(str(p)), tr.inconsistencies)
        tr.meta = schema.read_meta(con)
        return tr

    @classmethod
    def _open_kineto(cls, path: str, threads: int | None, use_cache: bool = True) -> "Trace":
        """A Kineto (torch.profiler) trace: read whole into DuckDB tables (kineto.py), no SQLite attached; the tables
        are kept in the cache and read from there next time (kineto_cache.py)."""
        from .kineto_cache import load
        if threads is None:
            from ..cpus import analysis_threads
            threads = analysis_threads()
        spill = spill_folder()
        con = None
        try:
            con = duckdb.connect(":memory:", config=duckdb_config(threads, spill))
            tr = cls(path, con, {}, threads=threads, source=path, spill=spill, format="kineto")
            tr.meta = load(con, path, tr.warnings, use_cache, tr.inconsistencies)
            return tr
        except BaseException:
            if con is not None:
                con.close()
            shutil.rmtree(spill, ignore_errors=True)
            raise

    # ------------------------------------------------------------------ what the model asks of an input
    def copy_calls(self):
        """The copy API calls' runtime rows, as Arrow parts (a context manager), reading from now on."""
        if self.format == "kineto":
            return kineto.copy_calls(self.con)
        return ingest.Parts(self, COPY_CALLS)

    def gpu_work(self):
        """Kernels, memsets and graph replays overlapping the spans of table work_spans (device_id, stream_id: int32;
        start, end, correlation_id, global_pid, name_id: a kernel's name), as one Arrow table, or as a DuckDB
        relation when each table was small enough for DuckDB to read itself (ingest.py). nsys: the span condition runs
        inside SQLite, so the full scan stays in its C loop and only the matching rows cross into DuckDB (5 M kernel rows: ~0.3 s,
        against ~1 s through DuckDB's scanner, which converts every row first)."""
        if self.format == "kineto":
            return kineto.gpu_work(self.con)
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
        import pyarrow as pa

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
        import pyarrow as pa

        self.con.register(name, pa.table([pa.array([r[i] for r in rows], type=getattr(pa, t)())
                                          for i, t in enumerate(types)], names=cols))

    def python_stacks(self, marks: list[tuple]) -> tuple[list[tuple], dict]:
        """([(global_pid, correlation_id, stack key)], {key: [(function, file, line)], innermost first}) of the
        copy calls (stacks.py). nsys: the decoded Python-backtrace payloads of `marks` (model/python_marks.sql)."""
        return stacks.python_stacks(self, marks)

    def native_stacks(self) -> list[tuple]:
        """[(callchain_id, depth, symbol, module)] of the copy calls' native stacks (CUDA backtraces), by id and
        depth (stacks.py)."""
        return stacks.native_stacks(self)

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
    import sqlite3

    try:
        with read_only(path) as con:
            return {n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'view'")}
    except sqlite3.Error:
        return set()
