"""Where each copy comes from and what its source really was, from the trace's own evidence.

Call site: the first frames of the user's program. Python frames (nsys --python-backtrace=cuda, or a
Kineto trace's python_function events) give `file:function`; otherwise the native stack (--cudabacktrace)
gives the framework op and the Python binding that reached it. Signatures leave out line numbers
and folders above the file's parent, so the same site matches across two traces of a program even
when a fix moved its lines.

Source class: the file's memory kind, refined by the native stack: PyTorch copies a strided host
view through a pageable contiguous temporary, and then `at::native::copy_kernel_cuda` appears twice
on the stack. Without evidence the class is `unknown`; nothing is guessed.
"""
from __future__ import annotations

import re

from ..rules.fixes import FIXES, FIXES_CUDA, FIXES_CUDA_D2H, FIXES_D2H
from ..rules.sites import is_library, kineto_site_names, parse_hook_range, site_names
from ..source import sql

CUDA_INTERNAL = re.compile(r"libcupti|libcuda\.so|libcudart|libnvidia|libnvToolsExt|libnvtx", re.I)
COPY_KERNEL = "at::native::copy_kernel_cuda"
COPY_OP = "aten::copy_"   # a Kineto CPU op (its frames are ops, not C++ symbols)
PY_MARK_WINDOW_NS = 1_000_000

def short_symbol(symbol: str) -> str:
    """`at::native::copy_(at::Tensor&, ...)` -> `at::native::copy_`."""
    s = symbol or "?"
    depth, out = 0, []
    for ch in s:  # drop the argument list and template arguments
        if ch in "(<":
            depth += 1
        elif ch in ")>":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    return "".join(out).strip() or s


def native_site(frames: list[tuple[str, str]]) -> tuple[str | None, int, str]:
    """(signature, copy frames, the frame counted) of a native stack, innermost frame first. The copy frames:
    at::native::copy_kernel_cuda in an nsys backtrace, or the aten::copy_ ops around the call in a Kineto
    trace's CPU-op stack (kineto_views.sql): two mean a copy through a temporary."""
    copies = sum(1 for sym, _ in frames if sym and sym.startswith(COPY_KERNEL))
    counted = COPY_KERNEL
    ops = sum(1 for sym, _ in frames if sym == COPY_OP)
    if ops > copies:
        copies, counted = ops, COPY_OP
    user = [(sym, mod) for sym, mod in frames
            if sym and not sym.startswith("0x") and not CUDA_INTERNAL.search(mod or "")
            and not sym.startswith("cuda") and not sym.startswith("cu")]
    if not user:
        return None, copies, counted
    op = short_symbol(user[0][0])
    binding = next((short_symbol(s) for s, _ in user if "THPVariable_" in s or "pybind11" in s), None)
    if binding:
        binding = binding.split("::")[-1]
        return f"{binding} > {op}", copies, counted
    return op, copies, counted


def python_site(frames: list[tuple[str, str, int]], at_def: bool = False) -> tuple[str, str] | None:
    """(signature, file:line) of the first frame of the user's program. at_def (the input's frames name the line
    a function starts on, as Kineto's python_function events do): what it called (the frame inside it) tells its
    copies apart (sites.kineto_site_names)."""
    for i, (fn, file, line) in enumerate(frames):
        if not is_library(file):
            if at_def:
                return kineto_site_names(file, fn, line, frames[i - 1][:2] if i else None)
            return site_names(file, fn, line)
    return None


def python_sites(trace) -> None:
    """Frames for model/python_sites.sql: bt_names_frame (py_site_id, site, site_line) and bt_sites_frame
    (global_pid, correlation_id, py_site_id) from the Python stacks the input adapter gives each call
    (Trace.python_stacks: nsys's backtrace marks, or Kineto's python_function events), each distinct stack named
    once; and hook_names_frame (name, site, site_line, hook_class): each distinct range name of the copy hook
    (model/hook_sites.sql makes hook_calls) parsed once. The per-call joins are SQL."""
    con = trace.con
    marks = sql.run(con, "model/python_marks", {"window_ns": PY_MARK_WINDOW_NS}).fetchall()
    calls, stacks = trace.python_stacks(marks)
    site_ids: dict[tuple[str, str], int] = {}
    site_of_stack = {}
    for key, frames in stacks.items():
        site = python_site(frames, trace.input.sites_at_def)
        if site:
            site_of_stack[key] = site_ids.setdefault(site, len(site_ids) + 1)
    py = [(p, c, site_of_stack[k]) for p, c, k in calls if k in site_of_stack]
    trace.frame("bt_names_frame", ["py_site_id", "site", "site_line"], ["int32", "string", "string"],
                [(i, s, line) for (s, line), i in site_ids.items()])
    trace.frame("bt_sites_frame", ["global_pid", "correlation_id", "py_site_id"], ["int64", "int64", "int32"], py)
    sql.run(con, "model/hook_sites")
    names = [(name, *parsed[1:], parsed[0]) for (name,) in sql.run(con, "model/hook_names").fetchall()
             if (parsed := parse_hook_range(name)) is not None]   # a name that does not parse names no site
    trace.frame("hook_names_frame", ["name", "site", "site_line", "hook_class"], ["string"] * 4, names)


def native_sites(trace) -> None:
    """Frames native_sites_frame (callchain_id, site, copy_kernels) and fixes_frame (source_class, fix)
    for model/attrib.sql: each distinct native stack decoded once."""
    stacks: dict[int, list[tuple[str, str]]] = {}
    for cid, _depth, sym, mod in trace.native_stacks():
        stacks.setdefault(cid, []).append((sym, mod))
    native = [(cid, *native_site(frames)) for cid, frames in stacks.items()]
    trace.frame("native_sites_frame", ["callchain_id", "site", "copy_kernels", "copy_frame"],
                ["int64", "string", "int64", "string"], native)
    trace.frame("fixes_frame", ["framework", "direction", "source_class", "fix"], ["string"] * 4,
                [(fw, d, k, v) for fw, d, fixes in (("torch", "h2d", FIXES), ("cuda", "h2d", FIXES_CUDA),
                                                    ("torch", "d2h", FIXES_D2H), ("cuda", "d2h", FIXES_CUDA_D2H))
                 for k, v in fixes.items()])
