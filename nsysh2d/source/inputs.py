"""Which format a trace came in, decided here and nowhere else (docs/architecture.md, "the input adapters").

One class per format behind one protocol (TraceInput): an nsys SQLite export, an nsys report (.nsys-rep/.qdrep:
exported by the nsys CLI, then read as its export), a Kineto (torch.profiler) JSON trace, and the 2021 Kineto
layout. Each knows how to open itself into the normalized views `n.*`, what it needs (an export, the source root
its sites are resolved against, whether a report of it is cached) and the fast paths the model asks a Trace for.
input_for(path) picks the class, by content first (a JSON object is Kineto, whatever its name), then by name (a
report is exported); everything else is read as an export and says what it is if it is not one. Above source/,
nothing asks which format a trace came in: it asks its adapter (`trace.input`) or, for a stored report, the class
its "format" names (named()).

Light on purpose: expand_inputs and a cached report's key decide formats without DuckDB, so the adapters' readers
are imported where they open a trace.
"""
from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar, Protocol

from ..errors import NsysH2DError
from . import sql
from .file_checks import check_file, check_input, is_sqlite
from .kineto_json import names_trace_events, sniff

REPORT_SUFFIXES = (".nsys-rep", ".qdrep")
KINETO_SUFFIXES = (".json", ".json.gz")
INPUT_SUFFIXES = (".sqlite", *REPORT_SUFFIXES, *KINETO_SUFFIXES)   # what a folder's traces are named
NOT_EXPORTED = (*REPORT_SUFFIXES, ".qdstrm")   # nsys's own files: a SQLite export must be made of them


class TraceInput(Protocol):
    """What a format provides. `make` is the Trace class (trace.py): the adapter fills one of it."""
    name: ClassVar[str]               # Trace.format, meta["format"], a report's "format"
    cacheable: ClassVar[bool]         # a report of it is kept in the report cache (keyed by the file's bytes)
    uses_source_root: ClassVar[bool]  # its sites are resolved against --source-root: part of a cached report's key
    sites_at_def: ClassVar[bool]      # its Python frames name the line a function starts on, not the call's line
    function_spans: ClassVar[bool]    # it has Python functions with durations (function_times)
    cpu_ops: ClassVar[bool]           # it has CPU ops (aten::*), which --steady-after op: names
    uncalled_copies: ClassVar[str]    # why a GPU copy can lack its API call in this format (the gate's words)
    no_steps_hint: ClassVar[str]      # what to add when no range matches the step pattern
    path: str

    @staticmethod
    def heading(rep: dict) -> str: ...   # who made a stored report's trace, for its heading

    def open(self, make, nsys: str | None, threads: int | None, use_cache: bool): ...
    def copy_calls(self, trace): ...
    def gpu_work(self, trace): ...
    def python_stacks(self, trace, marks: list[tuple]) -> tuple[list[tuple], dict]: ...
    def native_stacks(self, trace) -> list[tuple]: ...


class _Adapter:
    def __init__(self, path: str):
        self.path = path


class NsysSqlite(_Adapter):
    """An nsys SQLite export, attached read-only (a -journal/-wal beside it: read from a private copy)."""
    name, cacheable, uses_source_root = "nsys-sqlite", True, False
    sites_at_def = function_spans = cpu_ops = False
    # words for what this format lacks or holds (present/ and analyses/ ask the class, never the name)
    uncalled_copies = "(missing, unnamed or renamed in StringIds)"
    no_steps_hint = ""

    @staticmethod
    def heading(rep: dict) -> str:
        """Who made a report's trace, for its heading (a .nsys-rep's: the capturing nsys, then the exporting one)."""
        made = f"nsys {rep.get('nsys_version') or '?'}"
        if rep.get("exported_with") and rep["exported_with"] != rep.get("nsys_version"):
            made += f", exported with {rep['exported_with']}"
        return made

    def open(self, make, nsys=None, threads=None, use_cache=True):
        from .side_files import needs_private_copy, private_copy   # lazy: a cache hit decides formats only

        path = self.path
        check_input(path)
        reason = needs_private_copy(path) if is_sqlite(path) else None
        if not reason:
            return _attach(make, self, path, path, threads)
        copy = private_copy(path, keep=use_cache)
        where = "in the cache" if use_cache else "removed after the run"
        tr = _attach(make, self, copy, path, threads, None if use_cache else os.path.dirname(copy), "copied")
        tr.warnings.insert(0, f"{path} {reason}: read from a private copy ({where}); nothing was written beside it")
        return tr

    def copy_calls(self, trace):
        return trace.sqlite_copy_calls()

    def gpu_work(self, trace):
        return trace.sqlite_gpu_work()

    def python_stacks(self, trace, marks):
        from . import stacks   # lazy: reads the file through sqlite3; a cache hit decides formats only
        return stacks.python_stacks(trace, marks)

    def native_stacks(self, trace):
        from . import stacks   # lazy: as python_stacks
        return stacks.native_stacks(trace)


class NsysRep(NsysSqlite):
    """An nsys report: exported to SQLite by the nsys CLI (into the cache, or a folder removed on close with
    --no-cache), then read as that export. Its export names only the nsys that exported it: the capturing build
    is read from the report's header."""
    cacheable = False   # the export is cached (sealed), not the reports of it

    def open(self, make, nsys=None, threads=None, use_cache=True):
        from .export import report_build, sqlite_for_report   # lazy: a cache hit decides formats only

        check_input(self.path)
        build = report_build(self.path)   # None: a header naming no build we can read ("nsys ?", never the exporter)
        path = sqlite_for_report(self.path, nsys, keep=use_cache)
        tr = _attach(make, self, path, self.path, threads, None if use_cache else os.path.dirname(path), "exported")
        tr.meta["exported_with"] = tr.meta.get("nsys_version")
        tr.meta["nsys_version"] = build
        return tr


class ViewsInput(_Adapter):
    """The fast paths of a format that fills the views n.* itself in DuckDB (no SQLite to filter inside): read from
    those views by generic queries, so a new such format needs only its reader, its views and its class here.
    Python stacks are format-specific: none unless the format overrides python_stacks."""

    def copy_calls(self, trace):
        """The copy calls' runtime rows as the one part ingest.Parts would hand out for an nsys export."""
        return _one_part(sql.run(trace.con, "source/views_copy_calls").to_arrow_table())

    def gpu_work(self, trace):
        """Kernels and memsets overlapping the spans the backlogs need (work_spans), as model/work.sql reads them."""
        return sql.run(trace.con, "source/views_gpu_work").to_arrow_table()

    def python_stacks(self, trace, marks):
        return [], {}

    def native_stacks(self, trace):
        return sql.run(trace.con, "model/callchain_frames").fetchall()


@contextmanager
def _one_part(table):
    yield iter([table])


class KinetoJson(ViewsInput):
    """A torch.profiler (Kineto) chrome trace, .json or gzip-compressed: read whole into DuckDB tables (kineto.py),
    kept in the cache and read from there next time (kineto_cache.py); no SQLite attached."""
    name, cacheable, uses_source_root = "kineto", True, True
    sites_at_def = function_spans = cpu_ops = True
    uncalled_copies = "(their call is not in the trace: torch.profiler records no CUDA driver copy calls)"
    no_steps_hint = "; torch.profiler writes ProfilerStep#N ranges only with a profiler schedule"

    @staticmethod
    def heading(rep: dict) -> str:
        return "Kineto trace"

    def open(self, make, nsys=None, threads=None, use_cache=True):
        from .kineto_cache import load   # lazy: a cache hit decides formats only

        check_input(self.path)
        tr = make.connect(self.path, self.path, threads, self)
        try:
            tr.meta = load(tr.con, self.path, tr.warnings, use_cache, tr.inconsistencies)
        except BaseException:
            tr.close()
            raise
        if tr.meta.get("call_lines"):   # known once read: the layout is translated event by event (kineto_legacy)
            tr.input = KinetoLegacy(self.path)
        return tr

    def python_stacks(self, trace, marks):
        from . import kineto   # lazy: as open
        return kineto.python_stacks(trace.con)


class KinetoLegacy(KinetoJson):
    """torch 1.8-1.9's (2021) layout with stacks: each op's `Call stack` is its Python stack, naming the line each
    frame calls from (sites by call line, as nsys's), where with_stack's python_function events name the line a
    function starts on. Read by the same reader (kineto_legacy.py translates its categories and thread ids)."""
    sites_at_def = False


FORMATS = {cls.name: cls for cls in (NsysSqlite, KinetoJson)}


def input_for(path: str) -> TraceInput:
    """The adapter of a trace (reads at most its first 4 KiB; nothing for a file that is not a regular one, which
    its open() then refuses)."""
    path = str(path)
    if os.path.isfile(path) and not is_sqlite(path) and sniff(path):
        return KinetoJson(path)
    if path.endswith(REPORT_SUFFIXES):
        return NsysRep(path)
    return NsysSqlite(path)


def named(fmt: str | None) -> type:
    """The class of a stored report's "format" (an nsys export when it names none)."""
    return FORMATS.get(fmt or "", NsysSqlite)


def is_trace_file(path: str) -> bool:
    """Is a folder's file (named as INPUT_SUFFIXES) a trace? A JSON file that names no traceEvents is not one."""
    return os.path.isfile(path) and (not path.endswith(KINETO_SUFFIXES) or names_trace_events(path))


def _attach(make, adapter, path: str, source: str, threads, own_export: str | None = None, how: str = ""):
    """The export at `path` (the user's `source`, or its export or private copy in `own_export`/the cache) attached;
    an error names the user's file, and a --no-cache folder is removed whatever stopped the open."""
    try:
        p = check_file(path, path.endswith(NOT_EXPORTED))
        tr = make.connect(str(p), source, threads, adapter, sqlite=True)
    except BaseException as e:
        if own_export:
            shutil.rmtree(own_export, ignore_errors=True)
        if not isinstance(e, NsysH2DError) or path == source:
            raise
        # An export that is not even SQLite (nsys wrote garbage) is not kept: the next run exports again.
        # A valid export without CUDA data stays: exporting it again would give the same.
        if how == "exported" and not is_sqlite(path):
            Path(path).unlink(missing_ok=True)
        raise NsysH2DError(str(e).replace(path, f"{source} ({how} to {path})", 1), e.exit_code) from None
    tr.own_export = own_export
    return tr
