"""Chrome-trace forms that torch.profiler does not write but the format allows, and Perfetto and chrome://tracing
read: numbers written as strings ("ts": "123.5", "correlation": "81"), and a duration as a "B"/"E" pair of events
on one thread instead of one "X" event with a dur. Each is read as the form Kineto writes, or the file is refused
in one line: an event is never dropped for its form (docs/robustness.md).
"""
from __future__ import annotations

import re

from ..errors import BadInput
from . import kineto_legacy

# A JSON number spelled as a string, short enough to be a time or an id (no blanks, no hex, no "inf"/"nan").
_NUMBER = re.compile(r"-?[0-9]{1,24}(\.[0-9]{1,24})?([eE][+-]?[0-9]{1,3})?")
FIELDS = ("ts", "dur", "pid", "tid")
ARGS = ("correlation", "device", "stream", "bytes", "Python id", "Python parent id")
MAX_PENDING = 1 << 21   # "B"/"E" events held until the array ends (each a few hundred bytes): more is refused


def number(v):
    """A number written as a string, as the number JSON would give; anything else as it is."""
    if type(v) is str and _NUMBER.fullmatch(v):
        return float(v) if "." in v or "e" in v or "E" in v else int(v)
    return v


def numbers(ev: dict) -> dict:
    """The event with the numbers it is read by as numbers (a new dict only when one was written as a string)."""
    args = ev.get("args")
    strings = [k for k in FIELDS if type(ev.get(k)) is str]
    arg_strings = [k for k in ARGS if type(args.get(k)) is str] if type(args) is dict else []
    if not strings and not arg_strings:
        return ev
    ev = {**ev, **{k: number(ev[k]) for k in strings}}
    if arg_strings:
        ev["args"] = {**args, **{k: number(args[k]) for k in arg_strings}}
    return ev


class Pairs:
    """"B" and "E" events, held per thread until the array ends, then paired as the format says: on each thread, in
    time order (file order among equal times), an "E" ends the latest "B" still open; the "E"'s args add to the
    "B"'s. Only what the reader uses of a "B" is held."""

    def __init__(self, path: str, read):
        self.path = path
        self.read = read          # read(category) -> whether the reader reads events of it
        self.threads: dict = {}   # (pid, tid) -> [(ts ns, order, ev or None, is_begin)]
        self.count = 0

    def add(self, ev: dict, ts: int | None) -> None:
        begin = ev.get("ph") == "B"
        if ts is None:
            raise BadInput(f"{self.path}: a {ev.get('ph')!r} event without a usable time (ts {_show(ev.get('ts'))})")
        self.count += 1
        if self.count > MAX_PENDING:
            raise BadInput(f"{self.path}: more than {MAX_PENDING} 'B'/'E' events: too many to pair")
        held = self.keep(ev) if begin else (ev.get("args") if isinstance(ev.get("args"), dict) else None)
        key = (_hashable(ev.get("pid")), _hashable(ev.get("tid")))
        self.threads.setdefault(key, []).append((ts, self.count, held, begin))

    def keep(self, ev: dict) -> dict | None:
        """What the reader uses of a "B" event of a category it reads."""
        cat = ev.get("cat")
        if not isinstance(cat, str) or not self.read(cat):
            return None
        args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
        return {"ph": "X", "cat": cat, "name": ev.get("name"), "pid": ev.get("pid"), "tid": ev.get("tid"),
                "args": {k: args[k] for k in (*ARGS, *kineto_legacy.ARGS) if k in args}}

    def complete(self, emit) -> None:
        """emit(begin event, start ns, end ns) for every pair; refuses an "E" with nothing open and a "B" never
        ended (a duration cut short cannot be judged)."""
        for (pid, tid), evs in self.threads.items():
            evs.sort(key=lambda e: (e[0], e[1]))
            open_: list = []
            for ts, _order, held, begin in evs:
                if begin:
                    open_.append((ts, held))
                    continue
                if not open_:
                    raise BadInput(f"{self.path}: an 'E' event with no 'B' open on its thread (pid {_show(pid)}, tid "
                                   f"{_show(tid)}, ts {ts / 1000:g} us)")
                start, b = open_.pop()
                if b is not None:
                    emit({**b, "args": {**b.get("args", {}), **(held or {})}}, start, ts)
            if open_:
                raise BadInput(f"{self.path}: {len(open_)} 'B' events with no 'E' on their thread (pid {_show(pid)}, "
                               f"tid {_show(tid)}): durations cut short")
        self.threads.clear()


def _hashable(v):
    return v if isinstance(v, (int, float, str)) or v is None else repr(v)


def _show(v) -> str:
    return str(v) if type(v) in (int, float) else "not a number"
