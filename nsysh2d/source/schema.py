"""What an nsys export holds, whatever its version: the normalized views `n.*` over its tables.

Tables and columns differ between nsys versions, so every view selects by name and fills what a
version lacks with NULLs; what the analysis cannot do without is checked first and reported with the
nsys option that records it.
"""
from __future__ import annotations

# SQL in Python: the n.* views are built from data (schema.VIEWS and the columns the file has): that mapping
# is what turns nsys versions into one schema; names are checked identifiers, values never formatted in.

from urllib.parse import quote

from ..errors import BadInput
from . import sql

# Table -> (columns the normalized view exposes: source column or None, the nsys option that records it).
VIEWS = {
    "runtime": ("CUPTI_ACTIVITY_KIND_RUNTIME", "--trace=cuda", {
        "start": "start", "end": "end", "event_class": "eventClass", "global_tid": "globalTid",
        "correlation_id": "correlationId", "name_id": "nameId", "callchain_id": "callchainId"}),
    "memcpy": ("CUPTI_ACTIVITY_KIND_MEMCPY", "--trace=cuda", {
        "start": "start", "end": "end", "device_id": "deviceId", "stream_id": "streamId",
        "correlation_id": "correlationId", "global_pid": "globalPid", "bytes": "bytes",
        "copy_kind": "copyKind", "src_kind": "srcKind", "dst_kind": "dstKind"}),
    # graph_node_id: set on the copies a CUDA graph made (nsys --cuda-graph-trace=node); only those may be
    # claimed by a graph launch instead of a copy call (model/orphans.sql)
    "memcpy_graph": ("CUPTI_ACTIVITY_KIND_MEMCPY", "--trace=cuda", {
        "correlation_id": "correlationId", "global_pid": "globalPid", "graph_node_id": "graphNodeId"}),
    # name_id: the kernel's short name (NCCL collectives are told by it); memsets and replays have none
    "kernel": ("CUPTI_ACTIVITY_KIND_KERNEL", "--trace=cuda", {
        "start": "start", "end": "end", "device_id": "deviceId", "stream_id": "streamId",
        "correlation_id": "correlationId", "global_pid": "globalPid", "name_id": "shortName"}),
    "memset": ("CUPTI_ACTIVITY_KIND_MEMSET", "--trace=cuda", {
        "start": "start", "end": "end", "device_id": "deviceId", "stream_id": "streamId",
        "correlation_id": "correlationId", "global_pid": "globalPid", "name_id": None}),
    # CUDA graph replays as one row each (nsys --cuda-graph-trace=graph, the default); with =node their
    # kernels are in the kernel table instead.
    "graph": ("CUPTI_ACTIVITY_KIND_GRAPH_TRACE", "--trace=cuda", {
        "start": "start", "end": "end", "device_id": "deviceId", "stream_id": "streamId",
        "correlation_id": "correlationId", "global_pid": "globalPid", "name_id": None}),
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
    # nsys <= 2023.1 names it EXPORT_META_DATA.
    "meta_export": (("META_DATA_EXPORT", "EXPORT_META_DATA"), "(written by every nsys export)",
                    {"name": "name", "value": "value"}),
    "gpu_info": ("TARGET_INFO_GPU", "--trace=cuda", {"name": "name"}),
    "meta_capture": ("META_DATA_CAPTURE", "(written by every nsys export)", {"name": "name", "value": "value"}),
}
TYPES = {"text": "VARCHAR", "value": "VARCHAR", "label": "VARCHAR", "name": "VARCHAR"}

# Timestamps of +-2^62 ns (146 years) or more are damage, not time: they are read as NULL (so rows with them
# are left out with a warning) instead of overflowing a subtraction later. TIME_LIMIT is the largest kept:
# the difference of any two kept times (2^63 - 2 at most) fits INT64, which -2^62 .. 2^62 itself did not.
TIME_COLUMNS = ("start", "end")
TIME_LIMIT = 2 ** 62 - 1


def column_expr(src: str, out: str, dialect: str = "duckdb") -> str:
    """The SELECT expression of a normalized column, for DuckDB's views or SQLite itself (ingest.py). Text
    where an integer belongs is left as it is: reading it is then an error naming the table."""
    if out not in TIME_COLUMNS:
        return f'"{src}" AS "{out}"'
    if dialect == "sqlite":
        return (f"CASE WHEN typeof(\"{src}\") = 'integer' AND \"{src}\" NOT BETWEEN {-TIME_LIMIT} AND {TIME_LIMIT} "
                f'THEN NULL ELSE "{src}" END AS "{out}"')
    return f'CASE WHEN "{src}" BETWEEN {-TIME_LIMIT} AND {TIME_LIMIT} THEN "{src}" END AS "{out}"'


# What an analysis of H2D copies cannot do without.
REQUIRED = {"runtime": ["start", "end", "global_tid", "correlation_id", "name_id"],
            "strings": ["id", "value"]}
REQUIRED_IF_PRESENT = {"memcpy": ["start", "end", "correlation_id", "bytes", "copy_kind", "src_kind", "dst_kind"]}



# Lookup tables: one row per id, whatever the file holds.
ONE_ROW_PER_ID = ("strings", "mem_kind_enum", "copy_kind_enum", "event_class_enum", "event_type_enum")

# Views that fall back to source/known_enums.sql when the file has no such table.
KNOWN_ENUMS = {"mem_kind_enum": "known_mem_kind", "copy_kind_enum": "known_copy_kind",
               "event_class_enum": "known_event_class"}


def table_of(tables: dict[str, set[str]], view: str) -> str | None:
    """The file's table behind a view (the first of its names that the file has), or None."""
    names = VIEWS[view][0]
    for name in (names,) if isinstance(names, str) else names:
        if name in tables:
            return name
    return None


def source_columns(tables: dict[str, set[str]], view: str) -> tuple[str | None, dict[str, str | None]]:
    """(SQLite table or None, {normalized column: source column or None}) of a VIEWS entry."""
    _names, _option, cols = VIEWS[view]
    table = table_of(tables, view)
    if table is None:
        return None, {out: None for out in cols}
    have = tables[table]
    return table, {out: (src if src in have else None) for out, src in cols.items()}


ROWID_NAMES = {"rowid", "_rowid_", "oid"}


def check_typed(path: str, tables: dict[str, set[str]], blobs: set[tuple[str, str]]) -> None:
    """nsys declares a type for every column the views read; one without (read as BLOB) is not its export.
    nsys never names a column rowid: one that does shadows SQLite's row number, which the parallel reads
    (ingest.py) and DuckDB's scanner range over, and a NULL there hides the row from both (issue 37)."""
    for view in VIEWS:
        table, cols = source_columns(tables, view)
        shadow = sorted(c for c in tables.get(table, ()) if c.lower() in ROWID_NAMES) if table else []
        if shadow:
            raise BadInput(f"{path}: table {table} has a column named {shadow[0]}, which hides SQLite's row "
                           "numbers from the reads (nsys never writes one: an edited export?)")
        for src in cols.values():
            if src and (table, src) in blobs:
                raise BadInput(f"{path}: table {table}: column {src} has no declared type; columns not typed as "
                               "nsys writes them (an edited export?)")


def build_views(con, path: str, tables: dict[str, set[str]], warnings: list[str], views=(),
                inconsistencies: list[str] | None = None) -> None:
    """Schema n: one view per VIEWS entry over the attached file `src`, then source/views.sql. What the
    file contradicts itself on goes to `inconsistencies` (source/enum_contradictions.sql)."""
    inconsistencies = [] if inconsistencies is None else inconsistencies
    con.execute("CREATE SCHEMA n")
    sql.run(con, "source/known_enums")
    missing_tables, fallbacks = [], []
    for view, (names, option, cols) in VIEWS.items():
        table = names if isinstance(names, str) else names[0]
        have, mapped = source_columns(tables, view)
        if have is None and view in KNOWN_ENUMS:
            fallbacks.append(table)
            con.execute(f"CREATE VIEW n.{view} AS SELECT id, label FROM {KNOWN_ENUMS[view]}")
            continue
        needed = REQUIRED.get(view, [])
        if have is None and needed:
            missing_tables.append((table, option))
            continue
        exprs = []
        for out, src in mapped.items():
            if src:
                exprs.append(column_expr(src, out))
            else:
                if out in needed or (have is not None and out in REQUIRED_IF_PRESENT.get(view, [])):
                    raise BadInput(f"{path}: table {table} has no column {cols[out]}; re-export with a "
                                   "current 'nsys export --type sqlite'")
                exprs.append(f"CAST(NULL AS {TYPES.get(out, 'BIGINT')}) AS {out}")
        source = f'src."{have}"' if have is not None else "(SELECT 1) WHERE false"
        select = f"SELECT {', '.join(exprs)} FROM {source}"
        if view in ONE_ROW_PER_ID and have is not None:
            # A damaged file may repeat an id: every join on it would multiply rows. One row per id, said once.
            dups = con.execute(f'SELECT count(*) - count(DISTINCT id) FROM src."{have}"').fetchone()[0]
            if dups:
                warnings.append(f"{dups} duplicated ids in {have} (each id read once)")
                other = [c for c in mapped if c != "id"]
                # An id with two different names (a copy API named both async and sync) could be read either way.
                ambiguous = con.execute(f"SELECT count(*) FROM (SELECT id FROM ({select}) GROUP BY id HAVING "
                                        f"count(DISTINCT ({', '.join(other)})) > 1)").fetchone()[0]
                if ambiguous:
                    inconsistencies.append(f"{ambiguous} ids in {have} with two or more different names")
                select = (f"SELECT id, {', '.join(f'min({c}) AS {c}' for c in other)} FROM ({select}) "
                          "GROUP BY id")
        try:
            con.execute(f"CREATE VIEW n.{view} AS {select}")
        except Exception as e:   # e.g. a column declared TEXT where nsys declares INTEGER (check_typed has untyped)
            raise BadInput(f"{path}: table {have}: columns not typed as nsys writes them "
                           f"({str(e).splitlines()[0][:160]})") from None
    if missing_tables:
        table, option = missing_tables[0]
        if table in views:
            raise BadInput(f"{path}: {table} is a view, not a table as nsys writes it (an edited export?)")
        if not tables:
            raise BadInput(f"{path}: SQLite file without tables (not an nsys export)")
        if table == "CUPTI_ACTIVITY_KIND_RUNTIME":
            raise BadInput(f"{path}: no CUDA API trace (table {table} is missing; capture with "
                           f"'nsys profile {option}')")
        raise BadInput(f"{path}: table {table} is missing {option} (not an nsys export?)")
    if fallbacks:
        warnings.append(f"no {'/'.join(fallbacks)} table(s) (an nsys <= 2022.1 export?): kinds decoded with the "
                        "ids every ENUM table of nsys 2022.4 .. 2026.1 uses")
    sql.run(con, "source/global_tid")
    sql.run(con, "source/views")
    for table, id_, label, known in sql.run(con, "source/enum_contradictions").fetchall():
        inconsistencies.append(f"{table} labels id {id_} {label!r} where CUPTI's id {id_} is {known!r}")


def read_meta(con) -> dict:
    kv = dict(con.execute("SELECT name, value FROM n.meta_export").fetchall())
    gpu = con.execute("SELECT min(name) FROM n.gpu_info").fetchone()[0]
    # nsys profile --python-backtrace=cuda records PROCESS_N:CUDA_BACKTRACE_OPTIONS:COLLECT_PYTHON_BACKTRACES.
    pybt = con.execute("SELECT bool_or(lower(value) = 'true') FROM n.meta_capture "
                       "WHERE name LIKE '%COLLECT_PYTHON_BACKTRACES'").fetchone()[0]
    return {"format": "nsys-sqlite", "nsys_version": kv.get("EXPORT_PRODUCT_VERSION"),
            "schema_version": kv.get("EXPORT_SCHEMA_VERSION"), "gpu": gpu, "python_backtrace": bool(pybt)}


def first_bad_value(path: str) -> str | None:
    """Which table and column of an nsys export hold a value of another kind than nsys writes there (text or
    a BLOB where integers belong, a BLOB or text that is not UTF-8 where text belongs), or None. Asked only
    after a read failed on such a value: DuckDB's message names the column, not its table, and one quoting
    bytes that are not UTF-8 cannot even be decoded. SQLite reads the file itself, read-only and immutable
    (no side file is looked at)."""
    import sqlite3   # lazy: asked only after a read failed; files.py (on a cache hit's path) imports this module

    try:
        con = sqlite3.connect(f"file:{quote(path)}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error:
        return None
    try:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        tables = {t: {r[1] for r in con.execute(f'PRAGMA table_info("{t}")')} for t in names if '"' not in t}
        con.text_factory = bytes   # the values as stored: text that is not UTF-8 is what is looked for
        for view in VIEWS:
            table, cols = source_columns(tables, view)
            for out, src in cols.items() if table else ():
                want = "text" if out in TYPES else "integer"
                if src is None:
                    continue
                row = con.execute(f'SELECT typeof("{src}") FROM "{table}" NOT INDEXED '
                                  f"WHERE typeof(\"{src}\") NOT IN ('{want}', 'null') LIMIT 1").fetchone()
                if row:
                    return f'table {table} column "{src}" holds a {row[0].decode()} value where nsys writes {want}'
                if want == "text" and _not_utf8(con, table, src):
                    return f'table {table} column "{src}" holds text that is not valid UTF-8 (invalid unicode)'
    except sqlite3.Error:
        return None
    finally:
        con.close()
    return None


def _not_utf8(con, table: str, col: str) -> bool:
    for (value,) in con.execute(f'SELECT "{col}" FROM "{table}" NOT INDEXED WHERE typeof("{col}") = \'text\''):
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            return True
    return False
