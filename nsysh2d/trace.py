"""Open an nsys SQLite export read-only in DuckDB and expose normalized views.

The export is attached through DuckDB's sqlite scanner (shipped on PyPI for DuckDB 1.5.5, since
extensions cannot be downloaded at run time), opened READ_ONLY: nothing is ever written to or
beside the user's file. Tables and columns differ between nsys versions, so every view selects
by name and fills what a version lacks with NULLs; what the analysis cannot do without is checked
first and reported with the nsys option that records it.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from .errors import EXIT_EXPORT_FAILED, BadInput, NsysH2DError, first_line
from .sql import load as load_sql

SQLITE_MAGIC = b"SQLite format 3\x00"
COMPRESSED_MAGIC = {b"\x1f\x8b": "gzip", b"\xfd7zXZ": "xz", b"BZh": "bzip2", b"\x28\xb5\x2f\xfd": "zstd",
                    b"PK\x03\x04": "zip"}

# Table -> (columns the normalized view exposes: source column or None, the nsys option that records it).
VIEWS = {
    "runtime": ("CUPTI_ACTIVITY_KIND_RUNTIME", "--trace=cuda", {
        "start": "start", "end": "end", "event_class": "eventClass", "global_tid": "globalTid",
        "correlation_id": "correlationId", "name_id": "nameId", "callchain_id": "callchainId"}),
    "memcpy": ("CUPTI_ACTIVITY_KIND_MEMCPY", "--trace=cuda", {
        "start": "start", "end": "end", "device_id": "deviceId", "stream_id": "streamId",
        "correlation_id": "correlationId", "global_pid": "globalPid", "bytes": "bytes",
        "copy_kind": "copyKind", "src_kind": "srcKind", "dst_kind": "dstKind"}),
    "kernel": ("CUPTI_ACTIVITY_KIND_KERNEL", "--trace=cuda", {
        "start": "start", "end": "end", "device_id": "deviceId", "stream_id": "streamId",
        "correlation_id": "correlationId", "global_pid": "globalPid"}),
    "memset": ("CUPTI_ACTIVITY_KIND_MEMSET", "--trace=cuda", {
        "start": "start", "end": "end", "device_id": "deviceId", "stream_id": "streamId",
        "correlation_id": "correlationId", "global_pid": "globalPid"}),
    "strings": ("StringIds", "(written by every nsys export)", {"id": "id", "value": "value"}),
    "mem_kind_enum": ("ENUM_CUDA_MEM_KIND", "(written by every nsys export)", {"id": "id", "label": "label"}),
    "copy_kind_enum": ("ENUM_CUDA_MEMCPY_OPER", "(written by every nsys export)", {"id": "id", "label": "label"}),
    "event_class_enum": ("ENUM_NSYS_EVENT_CLASS", "(written by every nsys export)", {"id": "id", "label": "label"}),
    "event_type_enum": ("ENUM_NSYS_EVENT_TYPE", "(written by every nsys export)", {"id": "id", "label": "label"}),
    "nvtx": ("NVTX_EVENTS", "--trace=nvtx", {
        "start": "start", "end": "end", "event_type": "eventType", "text": "text", "text_id": "textId",
        "global_tid": "globalTid", "domain_id": "domainId"}),
    "callchains": ("CUDA_CALLCHAINS", "--cudabacktrace", {
        "id": "id", "symbol": "symbol", "module": "module", "depth": "stackDepth"}),
    "meta_export": ("META_DATA_EXPORT", "(written by every nsys export)", {"name": "name", "value": "value"}),
    "gpu_info": ("TARGET_INFO_GPU", "--trace=cuda", {"name": "name"}),
}
TYPES = {"text": "VARCHAR", "value": "VARCHAR", "label": "VARCHAR", "name": "VARCHAR"}

# What an analysis of H2D copies cannot do without.
REQUIRED = {"runtime": ["start", "end", "global_tid", "correlation_id", "name_id"],
            "strings": ["id", "value"]}
REQUIRED_IF_PRESENT = {"memcpy": ["start", "end", "correlation_id", "bytes", "copy_kind", "src_kind", "dst_kind"]}


def check_file(path: str) -> Path:
    """Reject what is not a readable SQLite file, with a message saying what it is instead."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except OSError as e:
        raise BadInput(f"{path}: cannot read ({e.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        raise BadInput(f"{path}: is a directory, not an nsys SQLite export")
    if st.st_size == 0:
        raise BadInput(f"{path}: empty file (an interrupted nsys export?)")
    try:
        with open(p, "rb") as f:
            head = f.read(100)
    except OSError as e:
        raise BadInput(f"{path}: cannot read ({e.strerror})") from None
    if head.startswith(SQLITE_MAGIC):
        if len(head) < 100 or st.st_size < 512:
            raise BadInput(f"{path}: truncated SQLite file ({st.st_size} bytes)")
        page = int.from_bytes(head[16:18], "big") or 65536
        pages = int.from_bytes(head[28:32], "big")
        if pages and st.st_size < page * pages:
            raise BadInput(f"{path}: truncated SQLite file ({st.st_size} of {page * pages} bytes; "
                           "an interrupted nsys export?)")
        return p
    for magic, kind in COMPRESSED_MAGIC.items():
        if head.startswith(magic):
            raise BadInput(f"{path}: {kind}-compressed file; decompress it first")
    if head[:4] in (b"\x00\x00\x00\x00",) or p.suffix in (".nsys-rep", ".qdrep", ".qdstrm"):
        raise BadInput(f"{path}: not a SQLite export (an nsys report? export it with "
                       "'nsys export --type sqlite' or pass it as .nsys-rep)")
    raise BadInput(f"{path}: not a SQLite file")


# DuckDB's own memory (tables, joins, sorts) stays under this; past it, it spills to disk. The parts
# ingest.py has in flight and the interpreter come on top (docs/benchmarks.md has the peak RSS).
DEFAULT_MEMORY_LIMIT = "200MB"


def memory_limit() -> str:
    return os.environ.get("NSYSH2D_MEMORY_LIMIT", DEFAULT_MEMORY_LIMIT)


def _duckdb_config(threads: int | None) -> dict:
    """Bounded memory: past the limit DuckDB spills to a folder in the user's cache, not RAM."""
    from .cachedir import cache_root

    spill = cache_root() / "spill"
    try:
        spill.mkdir(parents=True, exist_ok=True)
    except OSError:
        spill = Path(os.environ.get("TMPDIR", "/tmp"))
    # Arrow tables (ingest.py) give the planner no row counts; it then takes a join of millions of
    # rows for a tiny one and picks a nested loop, quadratic (17 s instead of 0.1 s on 100 k calls).
    config = {"memory_limit": memory_limit(), "temp_directory": str(spill),
              "preserve_insertion_order": False, "asof_loop_join_threshold": 0,
              "nested_loop_join_threshold": 0}
    if threads:
        config["threads"] = threads
    return config


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
    meta: dict = field(default_factory=dict)
    threads: int | None = None

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, path: str, nsys: str | None = None, threads: int | None = None) -> "Trace":
        path = str(path)
        if path.endswith((".nsys-rep", ".qdrep")):
            from .report import sqlite_for_report
            path = sqlite_for_report(path, nsys)
        p = check_file(path)
        con = duckdb.connect(":memory:", config=_duckdb_config(threads))
        con.execute(f"LOAD '{_sqlite_extension_path()}'")
        try:
            con.execute(f"ATTACH {_sql_string(str(p))} AS src (TYPE sqlite, READ_ONLY)")
            rows = con.execute("SELECT table_name, column_name FROM information_schema.columns "
                               "WHERE table_catalog = 'src'").fetchall()
        except duckdb.Error as e:
            if "locked" in str(e).lower() or "busy" in str(e).lower():
                raise BadInput(f"{path}: locked by another process (is nsys export still writing it?)") from None
            raise BadInput(f"{path}: cannot read as SQLite ({first_line(e)})") from None
        tables: dict[str, set[str]] = {}
        for t, c in rows:
            tables.setdefault(t, set()).add(c)
        tr = cls(str(p), con, tables, threads=threads)
        tr._build_views()
        tr._read_meta()
        return tr

    def _build_views(self) -> None:
        con = self.con
        con.execute("CREATE SCHEMA n")
        missing_tables = []
        for view, (table, option, cols) in VIEWS.items():
            have, mapped = self.source_columns(view)
            needed = REQUIRED.get(view, [])
            if have is None and needed:
                missing_tables.append((table, option))
                continue
            exprs = []
            for out, src in mapped.items():
                if src:
                    exprs.append(f'"{src}" AS {out}')
                else:
                    if out in needed or (have is not None and out in REQUIRED_IF_PRESENT.get(view, [])):
                        raise BadInput(f"{self.path}: table {table} has no column {cols[out]}; re-export with a "
                                       "current 'nsys export --type sqlite'")
                    exprs.append(f"CAST(NULL AS {TYPES.get(out, 'BIGINT')}) AS {out}")
            source = f'src."{table}"' if have is not None else "(SELECT 1) WHERE false"
            con.execute(f"CREATE VIEW n.{view} AS SELECT {', '.join(exprs)} FROM {source}")
        if missing_tables:
            table, option = missing_tables[0]
            if not self.tables:
                raise BadInput(f"{self.path}: SQLite file without tables (not an nsys export)")
            if table == "CUPTI_ACTIVITY_KIND_RUNTIME":
                raise BadInput(f"{self.path}: no CUDA API trace (table {table} is missing; capture with "
                               f"'nsys profile {option}')")
            raise BadInput(f"{self.path}: table {table} is missing {option} (not an nsys export?)")
        if "ENUM_CUDA_MEM_KIND" not in self.tables:
            self.warnings.append("no ENUM_CUDA_MEM_KIND table: memory kinds shown as numeric ids")
        con.execute(load_sql("views"))

    def _read_meta(self) -> None:
        kv = dict(self.con.execute("SELECT name, value FROM n.meta_export").fetchall())
        gpu = self.con.execute("SELECT min(name) FROM n.gpu_info").fetchone()[0]
        self.meta = {"nsys_version": kv.get("EXPORT_PRODUCT_VERSION"),
                     "schema_version": kv.get("EXPORT_SCHEMA_VERSION"), "gpu": gpu}

    def nvtx_blobs(self, domain_ids: list[int]) -> dict[tuple[int, int], bytes]:
        """NVTX extended payloads of marks in the given domains, keyed by (globalTid, start).

        nsys declares NVTX_EVENTS.binaryData as TEXT but stores blobs, which the DuckDB scanner
        rejects, so these few rows are read with Python's sqlite3, opened read-only."""
        import sqlite3
        from urllib.parse import quote

        if not domain_ids or "binaryData" not in self.tables.get("NVTX_EVENTS", set()):
            return {}
        con = sqlite3.connect(f"file:{quote(self.path)}?mode=ro", uri=True)
        try:
            marks = ",".join(str(int(d)) for d in domain_ids)
            rows = con.execute("SELECT globalTid, start, binaryData FROM NVTX_EVENTS "
                               f"WHERE domainId IN ({marks}) AND binaryData IS NOT NULL AND end IS NULL")
            return {(t, s): b if isinstance(b, bytes) else str(b).encode("latin-1", "replace") for t, s, b in rows}
        finally:
            con.close()

    def source_columns(self, view: str) -> tuple[str | None, dict[str, str | None]]:
        """(SQLite table or None, {normalized column: source column or None}) of a VIEWS entry."""
        table, _option, cols = VIEWS[view]
        have = self.tables.get(table)
        if have is None:
            return None, {out: None for out in cols}
        return table, {out: (src if src in have else None) for out, src in cols.items()}

    # ------------------------------------------------------------------ queries
    def sql(self, name: str, params: dict | None = None):
        """Run the named query from queries/ and return a polars DataFrame."""
        return self.con.execute(load_sql(name), params or {}).pl()

    def rows(self, name: str, params: dict | None = None) -> list[dict]:
        """Run the named query and return its rows as dicts (no polars: the CLI path stays light)."""
        cur = self.con.execute(load_sql(name), params or {})
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]

    def close(self) -> None:
        self.con.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _sql_string(text: str) -> str:
    """A SQL string literal (ATTACH takes no parameters)."""
    return "'" + text.replace("'", "''") + "'"

