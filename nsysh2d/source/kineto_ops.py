"""The CPU ops around each copy call of a Kineto trace, innermost first: the call's stack (n.callchains), as nsys
gives a call with a native backtrace.

A join of every op against every call it encloses grows as ops x calls: 20,000 ops nested around 20,000 calls (a
300 KB .json.gz) made 400 M rows and spilled 6 GB. Here one sweep per thread, ops and calls in start order, keeps
the ops still open in a stack: O(ops + calls) pushes and pops, and each call reads at most WALK entries from the
top of that stack and keeps at most MAX_DEPTH ops (ops nest on a thread, so the top of the stack is the call's
innermost enclosing op and what lies under it its enclosing ones; ops that overlap without nesting, which
torch.profiler does not write, cost at most the WALK).
"""
from __future__ import annotations

from array import array

MAX_DEPTH = 16   # ops kept of each call's stack, innermost first (real traces: 2-3; each becomes a row per call)
WALK = 256       # stack entries read for one call


def chains(ops: dict, calls) -> dict:
    """Columns global_tid, correlation_id, symbol (the op's name id), depth (0 = innermost) of the ops that enclose
    each call (start <= the call's start, end >= its end), innermost first: later start first, then earlier end,
    then smaller name id. `ops`: the columns global_tid, start, end, name_id; `calls`: (global_tid, start, end,
    correlation_id) of the copy calls."""
    out = {c: array("q") for c in ("global_tid", "correlation_id", "symbol", "depth")}
    by_tid: dict[int, list] = {}
    for call in set(calls):
        by_tid.setdefault(call[0], []).append(call)
    if not by_tid:
        return out
    tid, start, end, name = ops["global_tid"], ops["start"], ops["end"], ops["name_id"]
    mine: dict[int, list[int]] = {t: [] for t in by_tid}
    for i, t in enumerate(tid):
        got = mine.get(t)
        if got is not None:
            got.append(i)
    for t, its_calls in by_tid.items():
        order = sorted(mine[t], key=lambda i: (start[i], -end[i], -name[i]))   # outer before inner
        its_calls.sort(key=lambda c: (c[1], c[2], c[3]))
        stack: list[int] = []
        k = 0
        for _t, c_start, c_end, corr in its_calls:
            while k < len(order) and start[order[k]] <= c_start:
                i = order[k]
                while stack and end[stack[-1]] < start[i]:
                    stack.pop()
                stack.append(i)
                k += 1
            while stack and end[stack[-1]] < c_start:
                stack.pop()
            depth = 0
            for i in reversed(stack[-WALK:]):
                if end[i] >= c_end:
                    for col, v in zip(out.values(), (t, corr, name[i], depth)):
                        col.append(v)
                    depth += 1
                    if depth == MAX_DEPTH:
                        break
    return out
