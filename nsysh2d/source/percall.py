"""The compiled per-call pass (issue 59): the copy calls read, joined with their GPU activity and given their
innermost NVTX range in C (_percall.c), handed to DuckDB as one per-copy table.

The SQL steps stay the specification and the fallback: model/store_calls.sql and copies_join.sql (with with_nvtx
of nvtx.sql) make the same tables from the same rows. What changes is where the per-row work runs: the memcpy
activity (memcpy_raw, store_memcpy.sql) is indexed by correlation id in C; each part of the copy calls, as the
reader hands it over (ingest.Parts), is joined through that index; the NVTX range of each call is a binary search in
the events of model/nvtx.sql; DuckDB stores the joined part as copies (no api_raw, no join, no ASOF join). A trace
whose calls need folding (model/copies_fold.sql: an activity key with several rows, a call without or with several
activity rows, an activity row with two calls) gets the SQL steps, which read the calls again.

Used with NSYSH2D_PERCALL=1 (and both compiled modules built; NSYSH2D_READER=adbc turns it off): it is not the
default, for it is no faster on 2 cores and holds more memory (wanted()). tests/test_percall.py and
test_percall_exports.py compare both paths on every bundled export.
"""
from __future__ import annotations

import os

from . import ingest
from .inputs import ViewsInput

CALL_KINDS = "qqiqqiq"   # COPY_CALLS' columns as the pass reads them
GPU_COLUMNS = {"start": "gpu_start", "end": "gpu_end", "bytes": "bytes", "copy_kind": "copy_kind",
               "src_kind": "src_kind", "dst_kind": "dst_kind", "device_id": "device_id", "stream_id": "stream_id"}


def wanted(trace):
    """The _percall module when the pass should run on this trace, else None (the SQL steps do its work): an nsys
    export, with NSYSH2D_PERCALL=1. Off by default: on the 2-core machine it gives the same reports in the same
    time as the SQL steps, with ~300 MB more at its peak on the 20 M-row export (docs/benchmarks.md, issue 59)."""
    if isinstance(trace.input, ViewsInput) or os.environ.get("NSYSH2D_PERCALL") != "1":
        return None
    return compiled()


def compiled():
    """The _percall module, or None where it is off (NSYSH2D_PERCALL=0, NSYSH2D_READER=adbc) or was not built."""
    if os.environ.get("NSYSH2D_PERCALL") == "0" or ingest.compiled_reader() is None:
        return None
    try:
        import numpy  # noqa: F401  # lazy: the pass's buffers are numpy's; without it the pass is off

        from . import _percall   # lazy: optional (not built without a compiler); the pass is off then
    except ImportError:
        return None
    return _percall


class Activity:
    """The memcpy activity (model/percall_memcpy.sql's Arrow table) indexed by correlation id: match(part) gives
    each call of a part of the copy calls its activity row (-1: none), as copies_join.sql joins them."""

    def __init__(self, mod, table):
        self.mod = mod
        corr, ok = _values(table.column("correlation_id"))
        self.index, self.dups = mod.build_index(corr, ok)
        self.pid, self.pid_ok = _values(table.column("global_pid"))
        self.rows = table.num_rows
        self.table = table.select(list(GPU_COLUMNS))   # what the calls take from it (the keys are in the index)

    def match(self, part):
        import numpy as np   # lazy: a small report reads no Arrow (test_readers)

        corr, corr_ok = _values(part.column("correlation_id"))
        tid, tid_ok = _values(part.column("global_tid"))
        got = self.mod.match_calls(self.index, self.pid, self.pid_ok, corr, corr_ok, tid, tid_ok)
        return np.frombuffer(got, dtype=np.int64)


def arrow(part):
    """A part of the copy calls as an Arrow table (a small table's part is a DuckDB relation: ingest.py)."""
    return part if hasattr(part, "num_rows") else part.to_arrow_table()


def _values(col):
    """(values as int64 with NULLs as 0, a byte per row: 1 valid) of an Arrow integer column, for the C side."""
    import numpy as np   # lazy: a small report reads no Arrow (test_readers)
    import pyarrow as pa   # lazy: a small report reads no Arrow (test_readers)

    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    values = np.ascontiguousarray(col.cast(pa.int64()).fill_null(0).to_numpy(), dtype=np.int64)
    ok = np.ascontiguousarray(col.is_valid().to_numpy(zero_copy_only=False), dtype=np.uint8)
    return values, ok


class Plain:
    """Whether every copy call (not a host allocation) has exactly one activity row and no activity row has two
    calls, checked part by part: then copies_join.sql's rows are the calls as they are and nothing is folded
    (pipeline.FOLDS false). Anything else is left to the SQL steps."""

    def __init__(self, activity_rows: int, alloc_ids: set[int]):
        import numpy as np   # lazy: a small report reads no Arrow (test_readers)
        import pyarrow as pa   # lazy: a small report reads no Arrow (test_readers)

        self.claimed = np.zeros(activity_rows, dtype=bool)
        self.alloc = pa.array(sorted(alloc_ids), pa.int32())

    def add(self, part, match) -> bool:
        """Adds a part's calls (their activity rows: match); False once some call is not plain."""
        import numpy as np   # lazy: a small report reads no Arrow (test_readers)
        import pyarrow.compute as pc   # lazy: a small report reads no Arrow (test_readers)

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
    import numpy as np   # lazy: a small report reads no Arrow (test_readers)
    import pyarrow as pa   # lazy: a small report reads no Arrow (test_readers)

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
