"""The compiled per-call pass (issue 59): the copy calls read, joined with their GPU activity and given their
innermost NVTX range in C (_percall.c), handed to DuckDB as one per-copy table.

The SQL steps stay the specification and the fallback: model/store_memcpy.sql, store_calls.sql and
copies_join.sql (with with_nvtx of nvtx.sql) make the same tables from the same rows. What changes is where the
per-row work runs: the memcpy activity is read on the reading threads (_sqlite_ints_core.h) and indexed by
correlation id; each part of the copy calls, as SQLite's filtered read returns it, is joined through that index
on the same thread (the GIL released); the NVTX range of each call is a binary search in the events of
model/nvtx.sql. A trace whose calls need folding (model/copies_fold.sql: an activity key with several rows, a call
without or with several activity rows) gets the SQL steps for the join, over the rows read here (no second read).

Used with NSYSH2D_PERCALL=1 (and both compiled modules built; NSYSH2D_READER=adbc turns it off): it is not the
default, for it is no faster on 2 cores and holds more memory (wanted()). tests/test_percall.py and
test_percall_exports.py compare both paths on every bundled export.
"""
from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor

from . import ingest

MEMCPY = ingest.Read("memcpy", None, ["start", "end", "device_id", "stream_id", "correlation_id", "global_pid", "bytes",
                                      "copy_kind", "src_kind", "dst_kind"],
                     {"device_id": "INTEGER", "stream_id": "INTEGER", "copy_kind": "INTEGER", "src_kind": "INTEGER",
                      "dst_kind": "INTEGER"})
CALL_KINDS = "qqiqqiq"   # COPY_CALLS' columns as join_calls reads them (H2D_CALL_KINDS, _percall_core.h)
GPU_COLUMNS = {"start": "gpu_start", "end": "gpu_end", "bytes": "bytes", "copy_kind": "copy_kind",
               "src_kind": "src_kind", "dst_kind": "dst_kind", "device_id": "device_id", "stream_id": "stream_id"}


def wanted(trace):
    """The _percall module when the pass should run on this trace, else None (the SQL steps do its work): an nsys
    export, with NSYSH2D_PERCALL=1. Off by default: on the 2-core machine it gives the same reports in the same
    time as the SQL steps, with ~300 MB more at its peak on the 20 M-row export (docs/benchmarks.md, issue 59)."""
    if trace.format == "kineto" or os.environ.get("NSYSH2D_PERCALL") != "1":
        return None
    return compiled()


def compiled():
    """The _percall module, or None where it is off (NSYSH2D_PERCALL=0, NSYSH2D_READER=adbc) or was not built."""
    if os.environ.get("NSYSH2D_PERCALL") == "0" or ingest.compiled_reader() is None:
        return None
    try:
        import numpy  # noqa: F401  (matplotlib's dependency: always there where the module is)

        from . import _percall
    except ImportError:
        return None
    return _percall


class Joined:
    """The pass over one trace. Reading the activity starts on a thread at once (it overlaps the steps before the
    first that needs it); prepared() waits for it: (memcpy as an Arrow table, the number of repeated activity
    keys); the calls' first parts are read from then on. parts() reads and joins them, one part per thread ahead
    of the consumer (memory holds only the parts in flight): (calls part, each call's activity row or -1). A
    context manager: close() stops the reads."""

    def __init__(self, trace):
        self.mod, self.trace = compiled(), trace
        self.workers = ingest._workers(trace.threads)
        self.pool = ThreadPoolExecutor(self.workers)
        self.pending: deque = deque()   # the calls' parts being read (the driver starts them, parts() takes them)
        self.todo = iter(())
        self.driver = ThreadPoolExecutor(1)
        self.future = self.driver.submit(self._prepare)

    def _prepare(self):
        import pyarrow as pa

        trace = self.trace
        types, _small, parts = ingest.plan(trace, MEMCPY, small_rows=-1)
        table = trace.source_columns("memcpy")[0]
        with ingest.bad_table(trace, table):
            got = [f.result() for f in [self.pool.submit(self._read, sql, types, table) for sql in parts]]
        empty = pa.table({c: pa.array([], pa.int32() if t == "INTEGER" else pa.int64()) for c, t in types.items()})
        memcpy = pa.concat_tables([empty] + got)
        del got
        corr, ok = _values(memcpy.column("correlation_id"))
        self.index, dups = self.mod.build_index(corr, ok)
        self.pid, self.pid_ok = _values(memcpy.column("global_pid"))
        self._start_calls()   # the first parts of the calls read while the caller stores the activity
        return memcpy, dups

    def prepared(self):
        return self.future.result()

    def _start_calls(self):
        from .trace import COPY_CALLS

        self.types, _small, sqls = ingest.plan(self.trace, COPY_CALLS, small_rows=-1)
        if _kinds(self.types) != CALL_KINDS:
            raise RuntimeError(f"COPY_CALLS reads {_kinds(self.types)}, _percall.join_calls {CALL_KINDS}")
        self.todo = iter(sqls)
        self._fill()

    def _fill(self):
        while len(self.pending) < self.workers and (sql := next(self.todo, None)) is not None:
            self.pending.append(self.pool.submit(self._join, sql, self.types))

    def parts(self):
        self.prepared()
        table = self.trace.source_columns("runtime")[0]
        while self.pending:
            with ingest.bad_table(self.trace, table):
                got = self.pending.popleft().result()
            self._fill()
            yield got

    def _read(self, sql, types, table):
        """One part of the activity as an Arrow table (the C buffers themselves, no copy)."""
        try:
            rows, cols = self.mod.read_columns(ingest.read_only_uri(self.trace.path), sql, _kinds(types))
        except self.mod.NotIntegerError:
            raise ingest.not_integers(self.trace, table) from None
        return _table(rows, cols, types)

    def _join(self, sql, types):
        import numpy as np

        try:
            rows, cols, match = self.mod.join_calls(ingest.read_only_uri(self.trace.path), sql, self.index, self.pid,
                                                    self.pid_ok)
        except self.mod.NotIntegerError:
            raise ingest.not_integers(self.trace, self.trace.source_columns("runtime")[0]) from None
        return _table(rows, cols, types), np.frombuffer(_buffer(match), dtype=np.int64)

    def close(self):
        self.future.cancel()
        self.driver.shutdown(wait=True)   # the activity read done (it may have started the calls' reads)
        self.todo = iter(())
        for fut in self.pending:
            fut.cancel()
        self.pending.clear()
        self.pool.shutdown(wait=True)
        self.index = self.pid = self.pid_ok = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _kinds(types: dict[str, str]) -> str:
    return "".join("i" if t == "INTEGER" else "q" for t in types.values())


def _buffer(spec):
    """An Arrow buffer over memory the C side handed over ((address, bytes, owner): freed with the owner)."""
    import pyarrow as pa

    address, size, owner = spec
    return pa.foreign_buffer(address, size, base=owner) if size else pa.py_buffer(b"")


def _table(rows: int, cols, types: dict[str, str]):
    import pyarrow as pa

    arrays = [pa.Array.from_buffers(pa.int32() if t == "INTEGER" else pa.int64(), rows,
                                    [None if valid is None else _buffer(valid), _buffer(data)], nulls)
              for (data, valid, nulls), t in zip(cols, types.values())]
    return pa.table(arrays, names=list(types))


def _values(col):
    """(values as int64 with NULLs as 0, a byte per row: 1 valid) of an Arrow integer column, for the C side."""
    import numpy as np
    import pyarrow as pa

    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    values = np.ascontiguousarray(col.cast(pa.int64()).fill_null(0).to_numpy(), dtype=np.int64)
    ok = np.ascontiguousarray(col.is_valid().to_numpy(zero_copy_only=False), dtype=np.uint8)
    return values, ok


class Plain:
    """Whether every copy call (not a host allocation) has exactly one activity row and no activity row has two
    calls, checked part by part: then copies_join.sql's rows are the calls as they are and nothing is folded
    (pipeline.FOLDS false). Anything else is left to the SQL steps."""

    def __init__(self, activity_rows: int, alloc_ids: set[int]):
        import numpy as np
        import pyarrow as pa

        self.claimed = np.zeros(activity_rows, dtype=bool)
        self.alloc = pa.array(sorted(alloc_ids), pa.int32())

    def add(self, part, match) -> bool:
        """Adds a part's calls (their activity rows: match); False once some call is not plain."""
        import numpy as np
        import pyarrow.compute as pc

        copy = ~np.asarray(pc.is_in(part.column("name_id"), self.alloc).fill_null(False)
                           .to_numpy(zero_copy_only=False), dtype=bool)
        m = match[copy]
        if (m < 0).any() or self.claimed[m].any() or len(np.unique(m)) != len(m):
            return False
        self.claimed[m] = True
        return True


def copies_part(mod, part, match, memcpy, events):
    """One part of the calls with their activity row's columns (NULL for a call without: the host allocations,
    which percall_copies.sql sends to alloc_raw) and their innermost NVTX range (nvtx_id, nvtx_g)."""
    import numpy as np
    import pyarrow as pa

    idx = pa.array(match, mask=match < 0)
    gpu = memcpy.select(list(GPU_COLUMNS)).take(idx)
    tid, tid_ok = _values(part.column("global_tid"))
    start, start_ok = _values(part.column("start"))
    end, end_ok = _values(part.column("end"))
    rid, rid_ok, rg = mod.nvtx_attrib(tid, tid_ok, start, start_ok, end, end_ok, *events)
    rid_ok = np.frombuffer(rid_ok, dtype=np.uint8).astype(bool)
    nvtx_id = pa.array(np.frombuffer(rid, dtype=np.int64), mask=~rid_ok).cast(pa.int32())
    nvtx_g = pa.array(np.frombuffer(rg, dtype=np.int64)).cast(pa.int32())
    cols = {**{c: part.column(c) for c in part.column_names},
            **{GPU_COLUMNS[c]: gpu.column(c) for c in GPU_COLUMNS}, "nvtx_id": nvtx_id, "nvtx_g": nvtx_g}
    return pa.table(cols)


def events(table) -> tuple:
    """The NVTX events (model/percall_events.sql's Arrow table) as nvtx_attrib's last eight arguments."""
    out = []
    for c in ("global_tid", "t"):
        out.append(_values(table.column(c))[0])
    for c in ("inner_id", "inner_end", "inner_g"):
        out.extend(_values(table.column(c)))
    return tuple(out)
