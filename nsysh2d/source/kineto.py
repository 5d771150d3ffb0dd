"""PyTorch-profiler (Kineto) chrome traces as an input: the second adapter of the source layer.

The events fill the same normalized views `n.*` the nsys adapter builds (queries/source/kineto_views.sql), so
the model, analyses, gate and outputs do not know which format they read. What maps to what (docs/kineto.md):
`cuda_runtime`/`cuda_driver` events are the API calls (class 0/1 as nsys), `gpu_memcpy` the copies (kinds from
the event's name, e.g. `Memcpy HtoD (Pageable -> Device)`), `kernel` and `gpu_memset` the GPU work (graph
replays arrive as their kernels, as nsys's --cuda-graph-trace=node), `user_annotation` (record_function) the
ranges NVTX gives, and `python_function` (with_stack=True) the Python frames of each call; the `cpu_op`s around a call (aten::copy_
inside aten::copy_ for a strided source copied through a temporary) stand where nsys has native backtraces. Times are
microseconds with a nanosecond fraction: they become integer ns (rounded, so within 1 ns of the trace).
"""
from __future__ import annotations

# SQL in Python: copying registered Arrow tables into tables of fixed, internal names.

import math
import os
import re
import sys
import time
from array import array

from ..errors import BadInput
from . import kineto_forms, kineto_json, kineto_legacy, kineto_ops, sql
from .progress import read_progress as _progress
from .schema import TIME_LIMIT

EVENT_CLASS = {"cuda_runtime": 0, "cuda_driver": 1}        # known_enums.sql's ids
GPU_KIND = {"gpu_memcpy": 0, "gpu_memset": 1, "kernel": 2}
MEMCPY_NAME = re.compile(r"Memcpy (\w+) \((.+?) -> (.+?)\)")
PY_FRAME = re.compile(r"(.+)\((\d+)\): (.+)")
BUILT_IN = re.compile(r"<built-in (?:method|function) ([\w.]+)")   # a C function: its name, never its object's address
TID_LIMIT = 1 << 24   # nsys's globalTid packs pid and tid in 24 bits each (source/global_tid.sql)
OWN_TIDS = 1 << 23    # thread ids at or above this (or negative) get one of their own (Events.tid)


class Events:
    """What the analyses need of each event, kept as typed arrays (8 bytes a value), names as ids."""

    def __init__(self, path: str = ""):
        self.names: dict[str, int] = {}   # as the JSON spells them -> id
        self.texts: list[str] = []          # by id, as valid text (_text)
        self.runtime = {c: array("q") for c in ("start", "end", "event_class", "global_tid", "correlation_id", "name_id")}
        self.gpu = {c: array("q") for c in ("kind", "start", "end", "device_id", "stream_id", "correlation_id",
                                            "bytes", "name_id")}
        self.ranges = {c: array("q") for c in ("start", "end", "global_tid", "name_id")}
        self.py = {c: array("q") for c in ("global_tid", "start", "end", "py_id", "parent_id", "name_id")}
        self.ops = {c: array("q") for c in ("global_tid", "start", "end", "name_id")}
        self.skipped = 0   # events of a kind we read whose fields are missing or out of range
        self.unjudged = 0  # of them, GPU copies and copy calls: the gate cannot judge every copy
        self.other_apis: dict[str, int] = {}   # category -> events, for API categories that are not CUDA's
        self.tids: dict[tuple[int, int], int] = {}   # (pid, tid as written) -> its own tid, where one was given
        self.stacks = kineto_legacy.Stacks()          # ops' `Call stack`s (torch 1.8-1.9)
        self.pairs = kineto_forms.Pairs(path, _read)   # "B"/"E" events, paired once the array is read

    def name_id(self, name) -> int:
        name = str(name)
        got = self.names.get(name)
        if got is None:
            got = self.names[name] = len(self.names)
            self.texts.append(_text(name))
        return got

    def tid(self, pid: int, tid: int) -> int | None:
        """The thread id kept for a thread of the trace: as written below 2^23 (real Linux thread ids stay below
        2^22), else one of its own from [2^23, 2^24), so no two threads share one. Older torch.profiler versions
        wrote the pthread id cut to a signed 32-bit number, often negative (HTA's public traces of 2023 have
        them): those threads are real and keep their events. None once 2^23 such threads are given out."""
        if 0 <= tid < OWN_TIDS:
            return tid
        got = self.tids.get((pid, tid))
        if got is None and len(self.tids) < TID_LIMIT - OWN_TIDS:
            got = self.tids[(pid, tid)] = TID_LIMIT - 1 - len(self.tids)
        return got

    def __call__(self, ev: dict, span: tuple[int, int] | None = None) -> None:
        """One event of traceEvents; `span`: (start, duration) in ns of a "B"/"E" pair (kineto_forms.Pairs)."""
        cat, ph = ev.get("cat"), ev.get("ph")
        if ph in ("B", "E"):
            self.pairs.add(ev, _ns(kineto_forms.number(ev.get("ts"))))
            return
        if ph != "X" or not isinstance(cat, str):
            return
        ev = kineto_forms.numbers(ev)
        args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
        legacy = cat in kineto_legacy.CATEGORIES
        if legacy:
            cat = kineto_legacy.category(cat, ev.get("name"), args)
        elif cat not in _WANTED:
            if cat.endswith("_runtime"):   # another accelerator's API calls (mtia_runtime, xpu_runtime)
                self.other_apis[cat] = self.other_apis.get(cat, 0) + 1
            return
        start, dur = span or (_ns(ev.get("ts")), _ns(ev.get("dur")))
        if start is None or dur is None or dur < 0 or abs(start + dur) > TIME_LIMIT:
            return self.skip(cat, ev)
        end = start + dur
        pid, tid = ev.get("pid"), kineto_legacy.thread_id(ev.get("tid")) if legacy else ev.get("tid")
        if cat in GPU_KIND:
            dev, stream, corr = args.get("device", pid), args.get("stream", tid), args.get("correlation")
            if not all(_int(v) for v in (dev, stream, corr)) or not 0 <= dev < 2 ** 31 or not 0 <= stream < 2 ** 31:
                return self.skip(cat, ev)
            nbytes = args.get("bytes")
            _add(self.gpu, GPU_KIND[cat], start, end, dev, stream, corr, nbytes if _int(nbytes) else -1,
                 self.name_id(ev.get("name", "")))
            return
        if not (_int(pid) and _int(tid) and 0 <= pid < TID_LIMIT) or (kept := self.tid(pid, tid)) is None:
            return self.skip(cat, ev)
        gtid = pid * TID_LIMIT + kept
        if cat in EVENT_CLASS:
            corr = args.get("correlation")
            if not _int(corr):
                return self.skip(cat, ev)
            _add(self.runtime, start, end, EVENT_CLASS[cat], gtid, corr, self.name_id(ev.get("name", "")))
        elif cat == "user_annotation":
            _add(self.ranges, start, end, gtid, self.name_id(ev.get("name", "")))
        elif cat == "cpu_op":
            _add(self.ops, gtid, start, end, self.name_id(ev.get("name", "")))
        else:   # python_function
            py_id, parent = args.get("Python id"), args.get("Python parent id")
            if not _int(py_id):
                return self.skip(cat, ev)
            _add(self.py, gtid, start, end, py_id, parent if _int(parent) else -1, self.name_id(ev.get("name", "")))
        if legacy and cat in ("user_annotation", "cpu_op"):   # 2021 ops and ranges carry their Python stack
            self.stacks.add(gtid, start, end, args.get("Call stack"))

    def skip(self, cat: str, ev: dict) -> None:
        """An event left out; a copy or copy call among them leaves a copy the gate cannot judge."""
        self.skipped += 1
        if cat == "gpu_memcpy" or (cat in EVENT_CLASS and "Memcpy" in str(ev.get("name"))):
            self.unjudged += 1


_WANTED = {*EVENT_CLASS, *GPU_KIND, "user_annotation", "python_function", "cpu_op"}


def _read(cat: str) -> bool:
    """Is an event of this category read (or counted, for another accelerator's API calls)?"""
    return cat in _WANTED or cat in kineto_legacy.CATEGORIES or cat.endswith("_runtime")


def _int(v) -> bool:
    return type(v) is int and -2 ** 63 < v < 2 ** 63


def _ns(us):
    """Microseconds (a JSON number) as integer ns; None when it is not a finite number in range."""
    if type(us) is int:
        ns = us * 1000
    elif type(us) is float and math.isfinite(us) and abs(us) <= TIME_LIMIT / 1000:   # us * 1000 may overflow
        ns = round(us * 1000)
    else:
        return None
    return ns if abs(ns) <= TIME_LIMIT else None


def _add(cols: dict, *values) -> None:
    for col, v in zip(cols.values(), values):
        col.append(v)


def _table(cols: dict, int32=()):
    import pyarrow as pa   # lazy: a trace whose tables come from the cache (kineto_cache) loads no Arrow

    return pa.table({c: pa.array(v, type=pa.int32() if c in int32 else pa.int64()) for c, v in cols.items()})


def load(con, path: str, warnings: list[str], inconsistencies: list[str] | None = None) -> dict:
    """Read the trace at `path` into the tables k_* of `con` and build the views n.*; returns the metadata. GPU
    copies and copy calls left out (unusable fields) go to `inconsistencies` too: the gate cannot judge them."""
    import pyarrow as pa   # lazy: a trace whose tables come from the cache (kineto_cache) loads no Arrow

    events = Events(path)
    progress = _progress(path)
    meta = kineto_json.read(path, events, progress)
    if progress:
        progress(os.path.getsize(path))   # the last line of a progress shown, if the read's last part did not
    events.pairs.complete(lambda ev, start, end: events(ev, (start, end - start)))
    if not events.runtime["start"] and events.other_apis:
        other = max(events.other_apis, key=events.other_apis.get)
        raise BadInput(f"{path}: no CUDA runtime events; its API calls are {_text(other)[:40]!r} events (another "
                       "accelerator): nsysh2d reads CUDA traces only")
    if not events.runtime["start"]:
        raise BadInput(f"{path}: no CUDA runtime events (a Kineto trace captured without ProfilerActivity.CUDA?)")
    apis = [events.texts[i] for i in set(events.runtime["name_id"])]
    if not any(a.startswith("cu") for a in apis) and any(a.startswith("hip") for a in apis):
        raise BadInput(f"{path}: a ROCm (HIP) trace: its API calls are hip* functions, and "
                       "nsysh2d reads CUDA traces only")
    rt = events.runtime
    copy_ids = {i for n, i in events.names.items() if n.startswith("cu") and "Memcpy" in n[2:]}   # as the SQL's GLOB
    calls = [(t, s, e, c) for t, s, e, c, n in zip(rt["global_tid"], rt["start"], rt["end"], rt["correlation_id"],
                                                   rt["name_id"]) if n in copy_ids]
    call_lines = bool(events.stacks.ids and not events.py["start"])
    if call_lines:   # a 2021 trace: its ops' stacks are its Python frames
        events.stacks.frames(events.name_id, lambda *f: _add(events.py, *f), [c[:2] for c in calls])
        meta = {**meta, "with_stack": 1}
    if events.skipped:
        warnings.append(f"{events.skipped} trace events with missing or out-of-range fields left out")
    if events.unjudged and inconsistencies is not None:
        inconsistencies.append(f"{events.unjudged} GPU copies or copy calls with unusable fields (missing, not "
                               "numbers or out of range) left out: not judged")
    names = pa.table({"id": pa.array(range(len(events.texts)), pa.int64()),
                      "value": pa.array(events.texts, pa.string())})
    kinds = [(i, *m.groups()) for i, n in enumerate(events.texts) if (m := MEMCPY_NAME.fullmatch(n))]   # valid text
    copy_names = pa.table({"name_id": pa.array([k[0] for k in kinds], pa.int64()),
                           "copy_kind": pa.array([k[1] for k in kinds], pa.string()),
                           "src_kind": pa.array([k[2] for k in kinds], pa.string()),
                           "dst_kind": pa.array([k[3] for k in kinds], pa.string())})
    devices = meta.get("deviceProperties") if isinstance(meta.get("deviceProperties"), list) else []
    gpus = sorted({_text(d.get("name")) for d in devices if isinstance(d, dict) and d.get("name")})
    info = {"format": "kineto", "schema_version": _text(meta.get("schemaVersion")),
            "cuda_runtime_version": _text(meta.get("cuda_runtime_version")),
            "with_stack": _text(meta.get("with_stack"))}
    frames = {"k_strings": names, "k_copy_names": copy_names, "k_runtime": _table(events.runtime, ("event_class",)),
              "k_gpu": _table(events.gpu, ("kind", "device_id", "stream_id")), "k_ranges": _table(events.ranges),
              "k_py": _unique_ids(path, _table(events.py)), "k_ops": _table(events.ops),
              "k_chains": _table(kineto_ops.chains(events.ops, calls)),
              "k_meta": pa.table({"name": list(info), "value": list(info.values())},
                                 schema=pa.schema([("name", pa.string()), ("value", pa.string())])),
              "k_gpu_info": pa.table({"name": pa.array(gpus, pa.string())})}
    del events
    # Copied into DuckDB's own (compressed) tables, one at a time, each Arrow table freed after its copy; scans of
    # registered Arrow tables also refuse DuckDB's join filters (BLOOM_FILTER pushdown, DuckDB 1.5.5).
    for name in list(frames):
        con.register(f"{name}_arrow", frames.pop(name))
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_arrow")
        con.unregister(f"{name}_arrow")
    warnings.extend(finish(con))
    return {"nsys_version": None, "schema_version": info["schema_version"], "gpu": gpus[0] if gpus else None,
            "python_backtrace": False, "format": "kineto", "python_frames": info["with_stack"] == "1",
            # the 2021 layout's `Call stack` names each frame's current (call) line; with_stack's python_function
            # events name the line the function starts on (sites.kineto_site_names)
            "call_lines": call_lines}


# What load() makes and kineto_cache.py keeps: everything the views and the stack queries read.
TABLES = ("k_strings", "k_copy_names", "k_runtime", "k_gpu", "k_ranges", "k_py", "k_ops", "k_chains", "k_meta",
          "k_gpu_info")


def finish(con) -> list[str]:
    """The views n.* over the k_* tables (read now or from the cache), and the warnings they give."""
    sql.run(con, "source/known_enums")
    sql.run(con, "source/global_tid")
    sql.run(con, "source/kineto_views")
    sql.run(con, "source/views")
    unmatched = sql.run(con, "source/kineto_unmatched").fetchone()[0]
    if unmatched:
        return [f"{unmatched} GPU copies whose API call is not in the Kineto trace (torch.profiler does not record "
                "CUDA driver copy calls such as cuMemcpyHtoDAsync_v2; capture with nsys to judge them)"]
    return []


def _unique_ids(path: str, py):
    """torch gives each python_function event its own "Python id": stacks are walked by them (parent to parent),
    and one id shared by many events would make that walk fan out over all of them."""
    if py.num_rows and py.group_by(["global_tid", "py_id"]).aggregate([]).num_rows < py.num_rows:
        raise BadInput(f"{path}: python_function events share a \"Python id\" on one thread (torch gives each event "
                       "its own): their Python stacks cannot be told apart")
    return py


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _text(v):
    """A value from the JSON as valid text. A JSON escape can spell a lone surrogate ("\\ud800": json decodes a pair
    into one character, so what is left is alone), which no UTF-8 output (DuckDB, a terminal, a file) can hold:
    each becomes U+FFFD."""
    return None if v is None else _LONE_SURROGATE.sub("\ufffd", str(v))


def python_stacks(con) -> tuple[list[tuple], dict]:
    """([(global_pid, correlation_id, stack key)], {stack key: [(function, file, line), innermost first]}) of the
    copy calls: the python_function events enclosing each call on its thread, then their parents."""
    rows = sql.run(con, "source/kineto_python_stacks").fetchall()
    calls, stacks = {}, {}
    for gpid, corr, key, depth, name in rows:
        if depth is None:   # a call and its stack; the frames of each stack follow once
            calls[(gpid, corr)] = key
            continue
        m = PY_FRAME.fullmatch(name or "")
        if m:
            stacks.setdefault(key, []).append((depth, (m.group(3), m.group(1), int(m.group(2)))))
        elif b := BUILT_IN.match(name or ""):   # names no file: never the user's frame, but what it called
            stacks.setdefault(key, []).append((depth, (b.group(1), "<built-in>", 0)))
    frames = {k: [f for _d, f in sorted(v)] for k, v in stacks.items()}
    return [(p, c, k) for (p, c), k in calls.items()], frames
