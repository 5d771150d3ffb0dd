"""Open an nsys SQLite export read-only in DuckDB, with the normalized views of schema.py.

The export is attached through DuckDB's sqlite scanner (shipped on PyPI for DuckDB 1.5.5, since
extensions cannot be downloaded at run time), opened READ_ONLY: nothing is ever written to or
beside the user's file.
"""
from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from ..errors import EXIT_EXPORT_FAILED, BadInput, NsysH2DError, first_line
from . import schema, sql
from .files import check_file, is_sqlite

# DuckDB's own memory (tables, joins, sorts) stays under this; past it, it spills to disk. The parts
# ingest.py has in flight and the interpreter come on top (docs/benchmarks.md has the peak RSS). 160 MB
# for up to 2 threads: measured on the scaled exports (1x/2x/4x, two runs each), as fast as 200 MB
# (4.0-4.2 / 8.0-8.2 / 17.5-17.7 s against 4.0-4.9 / 7.8-8.7 / 17.1-17.6 s) with a peak RSS of 415-471 MB
# against 449-554 MB; 128 MB was slower at 4x (18.3-19.7 s). Each thread beyond needs its own share: at
# 160 MB the 1x export ran out of memory from 6 threads on, the 4x from 4 (it needed 161-192 MB at 4
# threads, 201-240 at 8, over 320 at 16); PER_THREAD gives about 1.3-1.5x what was needed.
BASE_THREADS, BASE_MB, PER_THREAD_MB = 2, 160, 40


def memory_limit(threads: int | None = None) -> str:
    """NSYSH2D_MEMORY_LIMIT as given, else the default for this many threads (this process's, from cpus.py)."""
    import re

    value = os.environ.get("NSYSH2D_MEMORY_LIMIT")
    if value is None:
        if threads is None:
            from ..cpus import analysis_threads
            threads = analysis_threads()
        return f"{BASE_MB + PER_THREAD_MB * max(0, threads - BASE_THREADS)}MB"
    if not re.fullmatch(r"\s*\d+(\.\d+)?\s*([KMGT]i?B|B)\s*", value, re.I):
        raise BadInput(f"bad NSYSH2D_MEMORY_LIMIT={value!r}: a size such as 200MB or 2GiB")
    return value


def _spill_folder() -> str:
    """A new folder, 0700, for this run's DuckDB spill files: in the user's cache, or in $TMPDIR when the
    cache cannot be written. Never a shared folder itself, where a link planted under DuckDB's file names
    would have its target overwritten (docs/security.md)."""
    import tempfile

    from ..cache import cache_dir

    try:
        base = cache_dir("spill")
    except (OSError, NsysH2DError):   # an unwritable or refused cache: a new folder in $TMPDIR is as safe
        base = None
    return tempfile.mkdtemp(prefix="run-", dir=base)


def _duckdb_config(threads: int, spill: str) -> dict:
    """Bounded memory: past the limit DuckDB spills to `spill`, not RAM. `threads` set always: DuckDB's own
    default counts the host's CPUs, not those this process may use (cpus.py)."""
    # Arrow tables (ingest.py) give the planner no row counts; it then takes a join of millions of
    # rows for a tiny one and picks a nested loop, quadratic (17 s instead of 0.1 s on 100 k calls).
    return {"memory_limit": memory_limit(threads), "temp_directory": str(spill), "threads": threads,
            "preserve_insertion_order": False, "asof_loop_join_threshold": 0,
            "nested_loop_join_threshold": 0, "disabled_optimizers": "build_side_probe_side"}


def _sqlite_extension_path() -> str:
    try:
        import duckdb_extension_sqlite_scanner as ext
    except ImportError:
        raise NsysH2DError("the DuckDB sqlite scanner is missing: pip install "
                           f"'duckdb-extension-sqlite-scanner=={duckdb.__version__}'", EXIT_EXPORT_FAILED) from None
    base = Path(ext.__file__).parent / "extensions"
    hits = sorted(base.glob(f"v{duckdb.__version__}/sqlite_scanner.duckdb_extension"))
    if not hits:
        raise NsysH2DError(f"the installed sqlite scanner does not match DuckDB {duckdb.__version__}; "
                           "reinstall nsysh2d", EXIT_EXPORT_FAILED)
    return str(hits[0])


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
    own_export: str | None = None   # the folder of a --no-cache export of a .nsys-rep (removed on close)

    @classmethod
    def open(cls, path: str, nsys: str | None = None, threads: int | None = None, use_cache: bool = True) -> "Trace":
        """use_cache=False (--no-cache): a .nsys-rep is exported anew, to a folder removed on close."""
        source = path = str(path)
        note = None
        own_export = None
        if path.endswith((".nsys-rep", ".qdrep")):
            from .export import sqlite_for_report
            path = sqlite_for_report(path, nsys, keep=use_cache)
            own_export = None if use_cache else os.path.dirname(path)
        elif os.path.isfile(path) and is_sqlite(path):
            from .files import needs_private_copy, private_copy

            reason = needs_private_copy(path)
            if reason:
                path = private_copy(path)
                note = f"{source} {reason}: read from a private copy in the cache; nothing was written beside it"
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
        spill = _spill_folder()
        try:
            return cls._connect(p, path, source, threads, spill)
        except BaseException:
            shutil.rmtree(spill, ignore_errors=True)
            raise

    @classmethod
    def _connect(cls, p: Path, path: str, source: str, threads: int, spill: str) -> "Trace":
        config = _duckdb_config(threads, spill)
        if os.environ.get("NSYSH2D_TIMING"):
            # one write: the workers of `analyze -j N` share the stderr, and print() writes in pieces
            os.write(2, f"nsysh2d: threads {threads}, DuckDB memory limit {config['memory_limit']}\n".encode())
        con = duckdb.connect(":memory:", config={**config, "allow_unsigned_extensions": True})
        con.execute(f"LOAD '{_sqlite_extension_path()}'")
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

    def source_columns(self, view: str) -> tuple[str | None, dict[str, str | None]]:
        return schema.source_columns(self.tables, view)

    def nvtx_blobs(self, domain_ids: list[int]) -> dict[tuple[int, int], bytes]:
        """NVTX extended payloads of marks in the given domains, keyed by (globalTid, start).

        nsys declares NVTX_EVENTS.binaryData as TEXT but stores blobs, which the DuckDB scanner
        rejects, so these few rows are read with Python's sqlite3, opened read-only."""
        if not domain_ids or "binaryData" not in self.tables.get("NVTX_EVENTS", set()):
            return {}
        with _read_only(self.path) as con:
            marks = ",".join(str(int(d)) for d in domain_ids)
            rows = con.execute("SELECT globalTid, start, binaryData FROM NVTX_EVENTS "
                               f"WHERE domainId IN ({marks}) AND binaryData IS NOT NULL AND end IS NULL")
            return {(t, s): b if isinstance(b, bytes) else str(b).encode("latin-1", "replace") for t, s, b in rows}

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


@contextmanager
def _read_only(path: str):
    """Python's sqlite3 on the file, read-only (what the DuckDB scanner cannot read or list)."""
    import sqlite3
    from urllib.parse import quote

    con = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True)
    try:
        yield con
    finally:
        con.close()


def _sqlite_views(path: str) -> set[str]:
    """Names of the file's views: the scanner lists tables only."""
    import sqlite3

    try:
        with _read_only(path) as con:
            return {n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'view'")}
    except sqlite3.Error:
        return set()
