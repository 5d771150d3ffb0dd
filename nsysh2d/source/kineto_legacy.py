"""What torch 1.8-1.9 (2021) wrote in a Kineto trace, in the terms of today's: the categories had other names
(`Runtime`, `Kernel`, `Memcpy`, `Memset`, and `Operator` for aten ops and record_function ranges alike), thread
ids were strings of digits, and with_stack put each op's Python stack in its `Call stack` argument
(`file.py(line): function;...`, innermost first) instead of python_function events. docs/kineto.md.
"""
from __future__ import annotations

import re
from array import array
from bisect import bisect_left

_SAME = {"Kernel": "kernel", "Memcpy": "gpu_memcpy", "Memset": "gpu_memset"}
CATEGORIES = {*_SAME, "Runtime", "Operator"}
_DIGITS = re.compile(r"[0-9]{1,18}")
_AUTOGRAD = re.compile(r"Backward\d*$")
ARGS = ("Call stack", "Input Dims", "Sequence number")   # what the reader uses of a 2021 event's args
MAX_DEPTH = 64   # frames kept of a stack, innermost first (queries/source/kineto_python_stacks.sql walks 64)


def category(cat: str, name, args: dict) -> str:
    """Today's category of an event in a 2021 one. `Runtime` held the driver's calls too (cuLaunchKernel: `cu`
    but not `cuda`). An `Operator` is an op when it has the marks of one (a `::` name such as aten::copy_,
    recorded shapes, an autograd node), else a record_function range (ProfilerStep#N, the user's own)."""
    if cat in _SAME:
        return _SAME[cat]
    name = name if isinstance(name, str) else ""
    if cat == "Runtime":
        return "cuda_driver" if name.startswith("cu") and not name.startswith("cuda") else "cuda_runtime"
    if "::" in name or "Input Dims" in args or "Sequence number" in args or _AUTOGRAD.search(name):
        return "cpu_op"
    return "user_annotation"


def thread_id(tid):
    """A thread id written as a string of digits, as a number; anything else as it is."""
    return int(tid) if type(tid) is str and _DIGITS.fullmatch(tid) else tid


class Stacks:
    """Each op's `Call stack`, kept to become Python frames (frames) once the whole trace is read."""

    def __init__(self):
        self.cols = {c: array("q") for c in ("global_tid", "start", "end", "stack_id")}
        self.ids: dict[str, int] = {}   # stack text -> id, in the order first seen

    def add(self, global_tid: int, start: int, end: int, stack) -> None:
        if isinstance(stack, str) and stack:
            sid = self.ids.setdefault(stack, len(self.ids))
            for col, v in zip(self.cols.values(), (global_tid, start, end, sid)):
                col.append(v)

    def frames(self, name_id, add, calls) -> None:
        """Python frames as python_function events would give them: `add(global_tid, start, end, py_id,
        parent_id, name_id)` for each. Only ops around a copy call count (`calls`: (global_tid, start) of each),
        as only those frames are ever read: memory follows the copies, not the ops, and each stack keeps its
        innermost MAX_DEPTH frames (the most the stack query walks). Ops are taken per thread in start order
        (outer before inner); an op shares the frames its stack has in common with the previous op's, outermost
        first, and those frames last until the end of the last op that shares them, so a call's enclosing frames
        are one chain of parents, as with_stack's events are today. Two ops in a row from one line share that
        line's frame."""
        starts: dict[int, list[int]] = {}
        for tid, start in calls:
            starts.setdefault(tid, []).append(start)
        for v in starts.values():
            v.sort()
        c, texts = self.cols, list(self.ids)   # ids are given in insertion order: texts[id] is its stack

        def around_a_call(i: int) -> bool:
            got = starts.get(c["global_tid"][i])
            k = bisect_left(got, c["start"][i]) if got else 0
            return bool(got) and k < len(got) and got[k] <= c["end"][i]

        keep = [i for i in range(len(c["start"])) if around_a_call(i)]
        keep.sort(key=lambda i: (c["global_tid"][i], c["start"][i], -c["end"][i]))
        stacks: dict[int, list[int]] = {}
        frames: list[list[int]] = []   # [global_tid, start, end, py_id, parent_id, name_id]
        open_: list[int] = []          # the previous op's frames, outermost first (indices in frames)
        tid = None
        for i in keep:
            if c["global_tid"][i] != tid:
                tid, open_ = c["global_tid"][i], []
            sid = c["stack_id"][i]
            if sid not in stacks:
                stacks[sid] = [name_id(f) for f in reversed([f for f in texts[sid].split(";") if f][:MAX_DEPTH])]
            stack, start, end = stacks[sid], c["start"][i], c["end"][i]
            k = 0
            while k < min(len(open_), len(stack)) and frames[open_[k]][5] == stack[k]:
                k += 1
            open_ = open_[:k]
            for f in open_:
                frames[f][2] = max(frames[f][2], end)
            for name in stack[k:]:
                parent = frames[open_[-1]][3] if open_ else -1
                frames.append([tid, start, end, len(frames), parent, name])
                open_.append(len(frames) - 1)
        for f in frames:
            add(*f)
