"""The steady state of a trace without step ranges (issue 56): `--steady-after WHEN` leaves out the copies (and
host allocations) whose call starts before WHEN, for analyze, compare and gate alike. WHEN is a duration after
the trace's first API call (`2s`), the first NVTX / record_function range of a name (`range:NAME`), or the first
CPU op or Python function of a name in a torch.profiler trace (`op:NAME`, e.g. `op:train_step`)."""
from __future__ import annotations

from ..errors import BadInput
from ..units import format_ns, parse_duration

FORMS = "a duration (2s), range:NAME or op:NAME"


def parse(spec: str) -> tuple[str, str, int]:
    """(kind, name, skip ns) of a --steady-after value; bad ones are bad input."""
    kind, _, name = str(spec).partition(":")
    if kind in ("range", "op") and name:
        return kind, name, 0
    try:
        return "time", "", parse_duration(spec)
    except BadInput:
        raise BadInput(f"bad --steady-after {spec!r}: use {FORMS}") from None


def apply(model, spec: str | None) -> str | None:
    """Set the model's steady-state start (DuckDB variable steady_from, which calls_k and by_cause.sql read) and
    say in words what it left out; None without a spec. A marker the trace lacks leaves nothing out, and says so."""
    if not spec:
        model.trace.run("analyses/steady_set", {"t": None})
        return None
    kind, name, skip = parse(spec)
    if kind == "op" and not model.trace.input.cpu_ops:
        row = {"start": None, "first_call": None, "before": 0}
        why = "op: needs a torch.profiler (Kineto) trace; this one has no CPU ops"
    else:
        q = "analyses/steady_op" if kind == "op" else "analyses/steady_start"
        row = model.rows(q, {"name": name} if kind == "op" else {"kind": kind, "name": name, "skip_ns": skip})[0]
        why = f"no {'range' if kind == 'range' else 'op or Python function'} named {name!r} in this trace"
    model.trace.run("analyses/steady_set", {"t": row["start"]})
    if row["start"] is None:
        return f"--steady-after {spec} does not apply: {why}; every copy is judged"
    into = format_ns(max(row["start"] - (row["first_call"] or row["start"]), 0))
    return (f"steady state from {spec} ({into} after the first API call): {row['before']} copy "
            f"call{'' if row['before'] == 1 else 's'} before it left out")
