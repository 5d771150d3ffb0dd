"""Which copies the gate judges (the scope of its rules), from a report's step rows: with step ranges, the
copies during steps past the warm-up (the steady state); without, every copy. The steps stand for the run only
if they hold it (issue 54: a crafted step range left every long copy "outside steps, not judged"): every copy of
the run is judged instead, and the verdict says why, when
- fewer than half of the run's copy calls from the first step range on ran during step ranges (warm-up steps
  included): one tiny step range (copies before the first step began, model init, are not counted);
- no step is left past --warmup-steps (one step around the whole run and --warmup-steps 1);
- the steps past the warm-up hold no copy call while the warm-up steps hold long ones (a tiny step range after a
  step around the whole run)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..source.inputs import named
from .rules import Rules

# The share of the run's copy calls the step ranges (warm-up included) must hold for the gate to judge steps only.
MIN_SHARE_IN_STEPS = 0.5


@dataclass
class Scope:
    rows: list[dict]            # by_step rows (or by_kind rows: the whole run) the rules sum
    steps: int                  # the steps per-step figures divide by (0: none)
    words: str                  # what was judged, for the verdict's message
    in_scope: Callable          # top row -> whether it is judged


def kind_ok(kind, rules: Rules) -> bool:
    return not rules.kinds or kind in rules.kinds


def scope(rep: dict, rules: Rules) -> Scope:
    st, by_step = rep["steps"], rep.get("by_step")
    steps = st["steps"]
    kinds = [r for r in rep["by_kind"] if kind_ok(r["src_kind"], rules)]
    skipped = f" ({st['not_counted']} ranges matching the step pattern not counted: shorter than 10 us or overlapping " \
              "an earlier step range)" if st.get("not_counted") else ""
    steady = f"; {st['steady']}" if st.get("steady") else ""
    if not steps or by_step is None:
        # an option that cannot apply says so in the verdict (issue 56)
        warm = (f"; --warmup-steps {rules.warmup_steps} does not apply: the trace has no step ranges ("
                f"{no_steps_words(rep)}), so every copy is judged (--steady-after judges from a range, an op or a "
                "time on)") if rules.warmup_steps else ""
        return Scope(kinds, steps, (skipped and f"; no step range{skipped}") + steady + warm, lambda t: True)
    n = max(steps - rules.warmup_steps, 0)
    in_judged = lambda r: r["step"] is not None and r["step"] >= rules.warmup_steps  # noqa: E731
    # Copies before the first step began (model init) are not asked to run during steps; a trace cached before
    # by_step had before_steps counts every copy.
    total = sum(r["calls"] for r in by_step if not r.get("before_steps"))
    in_steps = sum(r["calls"] for r in by_step if r["step"] is not None)
    judged_calls = sum(r["calls"] for r in by_step if in_judged(r))
    warmup_long = sum(r["long_calls"] for r in by_step if r["step"] is not None and not in_judged(r))
    skip = f", first {rules.warmup_steps} skipped as warm-up" if rules.warmup_steps else ""
    why = (f"only {in_steps} of its {total} copy calls from the first step on ran during the {steps} step ranges "
           "(fewer than half)" if in_steps < MIN_SHARE_IN_STEPS * total else
           f"--warmup-steps {rules.warmup_steps} leaves none of the {steps} step ranges" if total and not n else
           f"the {n} step ranges past the warm-up hold none of its {total} copy calls, the {rules.warmup_steps} "
           f"warm-up steps {warmup_long} long ones" if total and not judged_calls and warmup_long else "")
    if why:
        return Scope(kinds, steps, f"; judged: every copy of the run, as {why}: the steps do not stand for the "
                     f"run{skipped}{steady}", lambda t: True)
    rows = [r for r in by_step if kind_ok(r["src_kind"], rules)]
    judged = [r for r in rows if in_judged(r)]
    info = sum(r[rules.count_key] for r in rows if not in_judged(r))
    words = (f"; judged: copies during {n} of {steps} step ranges{skip}"
             + (f"; {info} {rules.what} copies outside them not judged" if info else "") + skipped + steady)
    # the step a listed call ran in is the report's own (top.sql, matched by DuckDB's RE2): Python's re never
    # runs the pattern on a trace's names
    return Scope(judged, n, words, lambda t: t.get("step") is not None and t["step"] >= rules.warmup_steps)


def no_steps_words(rep: dict) -> str:
    """Why a trace has no steps, in plain words (the pattern as typed, not as a JSON or Python string)."""
    pattern = rep["steps"]["pattern"]
    return (f"no NVTX or record_function range matches the step pattern {pattern}"
            + named(rep.get("format")).no_steps_hint)
