"""The CI gate: rules over a Report (and a stored baseline), a verdict per report.

Settings come from the command line, then [tool.nsysh2d.gate] of pyproject.toml (GateSettings.resolve);
a Baseline is made from a Report and read back with validation, so a gate against a baseline never
needs the baseline's trace.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import EXIT_BAD_INPUT, NsysH2DError
from ..source.inputs import named
from ..units import parse_duration, parse_fraction, plural
from .accepted import accepted_words, split_accepted
from .baseline import against_baseline, finding_match, read_baseline
from .options import CALLS, DEFAULT_STEP_PATTERN, DIRECTIONS, Options, check_kinds, left_out
from .rules import CAUSES, RuleResult, Rules
from .scope import kind_ok, no_steps_words, scope as judged_scope


def gate(rep: dict, rules: Rules, baseline: dict | None = None) -> list[RuleResult]:
    count_key, what = rules.count_key, rules.what
    results = []
    sc = judged_scope(rep, rules)
    judged, steps, words, in_step = sc.rows, sc.steps, sc.words, sc.in_scope
    n = sum(r[count_key] for r in judged)
    offenders = [t for t in rep["top"] if kind_ok(t["src_kind"], rules)
                 and (t["waited_for_gpu"] or rules.count == "long") and in_step(t)]
    scope = f" from {'/'.join(rules.kinds)} memory" if rules.kinds else ""
    if baseline is not None:
        # Known findings are the baseline's to judge (no-growth): this rule counts the new ones only.
        match = finding_match(baseline, rep, count_key)
        known = {r["group"] for r in baseline.get(match.field, []) if r.get(count_key)}
        new_rows = [r for r in rep.get(match.field, []) if r[count_key] and r["group"] not in known]
        n = sum(r[count_key] for r in new_rows)
        scope, words = f"{scope} at {plural(2, match.title).split(' ', 1)[1]} the baseline does not accept", ""
        offenders = [t for t in offenders if match.key_of(t) not in known]
    offenders, accepted = split_accepted(offenders, rules)
    n_acc = len(accepted) if not rules.warmup_steps else 0   # a warm-up call is listed, never subtracted
    n -= n_acc
    words += accepted_words(accepted, n_acc)
    t = rep["totals"]
    other = left_out(rep.get("calls", "async"))
    left = (f"; not judged: {plural(t[f'{other}_long_calls'], f'long {other} copy call')} ({t[f'{other}_long_ns'] / 1e6:.2f} ms; "
            f"--calls all judges them)") if other and t.get(f"{other}_long_calls") else ""
    results.append(RuleResult(
        "max-long-calls", n <= rules.max_long_calls,
        f"{n} {what} {rep['direction']} copies (>= {rep['min_duration_ns'] / 1000:g} us host time){scope}; "
        f"allowed {rules.max_long_calls}{words}{left}", offenders if n > rules.max_long_calls else [], accepted,
        n if n > rules.max_long_calls else None))
    for name, limit, key, words_of in (
            ("max-blocked-per-step", rules.max_blocked_per_step_ns, rules.time_key, f"host time in {what} copies"),
            ("max-gpu-idle-per-step", rules.max_gpu_idle_per_step_ns, "gpu_idle_ns", "GPU idle during long copies")):
        if limit is None:
            continue
        if not steps:
            results.append(RuleResult(name, False, f"cannot compute a per-step figure: the trace has no step ranges "
                                      f"({no_steps_words(rep)}); name them with --step-pattern, or judge the trace "
                                      "with --max-long-calls (and --steady-after)"))
            continue
        if any(r.get(key) is None for r in judged):
            results.append(RuleResult(name, False, "GPU idle was not computed for every long copy (more than "
                                      "NSYSH2D_GPU_IDLE_MAX long calls): raise it to judge this rule"))
            continue
        per = sum(r.get(key) or 0 for r in judged) / steps
        why = [t for t in offenders if (t.get("gpu_idle_ns") or 0) > 0] if key == "gpu_idle_ns" else offenders
        results.append(RuleResult(name, per <= limit, f"{per / 1e6:.3f} ms {words_of} per step over {steps} steps; "
                                  f"allowed {limit / 1e6:.3f} ms", why if per > limit else []))
    why = [f"{n} {what}" for n, what in (
        (t.get("unclassified_calls", 0), "copy calls whose memory or copy kind cannot be decoded"),
        (t.get("calls_without_activity", 0), "memcpy API calls without a GPU activity row (direction and memory "
                                             "kinds unknown; was the capture cut short?)"),
        (t.get("activity_without_call", 0), "copies that no copy API call claims "
         + named(rep.get("format")).uncalled_copies),
        (t.get("merged_calls", 0), "correlationIds shared by several memcpy calls"),
        (t.get("unusable_time_calls", 0), "copy calls with an unusable host start/end (NULL, 2^62 ns or more, or "
                                          "ending before they start)"),
        (t.get("disagreeing_calls", 0), "copy calls whose runtime and backtrace rows disagree on the duration")) if n]
    if why:
        results.append(RuleResult("classified-copies", False, " and ".join(why) + ": they cannot be judged, so "
                                  "the trace cannot pass (see the warnings of 'analyze')"))
    if rep.get("inconsistencies"):
        results.append(RuleResult("consistent-trace", False, "the trace contradicts itself: "
                                  + "; ".join(rep["inconsistencies"]) + ": its figures cannot be trusted, so it "
                                  "cannot pass"))
    procs = rep.get("by_process") or []
    if rules.max_blocked_per_step_ns is not None and len(procs) > 1:
        results.append(process_rule(procs, rules))
    if rules.fail_causes:
        results.append(cause_rule(rep, rules))
    if baseline is not None:
        results += against_baseline(rep, baseline, rules)
    return results


def process_rule(procs: list[dict], rules: Rules) -> RuleResult:
    """max-blocked-per-step-per-process: with several processes (ranks), each one's host time in blocking copies
    per step of its own stays within the limit (the total over every step could hide one slow rank)."""
    name, limit = "max-blocked-per-step-per-process", rules.max_blocked_per_step_ns
    if rules.count != "blocking" or rules.warmup_steps or rules.kinds:
        return RuleResult(name, False, "per process, only blocking copies of every kind and every step are counted: "
                          "cannot judge with --count long, --warmup-steps or --kind")
    no_steps = [p["pid"] for p in procs if not p["steps"]]
    if no_steps:
        return RuleResult(name, False, f"process {no_steps[0]} has no step ranges: cannot compute its per-step figure")
    worst = max(procs, key=lambda p: p["blocking_ns_per_step"])
    over = [p for p in procs if p["blocking_ns_per_step"] > limit]
    return RuleResult(name, not over, f"{len(over)} of {len(procs)} processes over the limit; worst: pid {worst['pid']} "
                      f"{worst['blocking_ns_per_step'] / 1e6:.3f} ms per step over {worst['steps']} steps; allowed "
                      f"{limit / 1e6:.3f} ms")


def cause_rule(rep: dict, rules: Rules) -> RuleResult:
    """no-long-calls-of-cause: no long call whose cause (by_cause) is one of rules.fail_causes. Long calls whose
    backlog was not computed have no cause: the rule cannot judge them, so it fails."""
    rows = {r["cause"]: r for r in rep.get("by_cause") or []}
    hit = [rows[c] for c in rules.fail_causes if c in rows]
    listed = "/".join(rules.fail_causes)
    if "not_computed" in rows:
        return RuleResult("no-long-calls-of-cause", False, f"{rows['not_computed']['calls']} long calls have no cause "
                          "(their backlog was not computed: raise NSYSH2D_GPU_IDLE_MAX): cannot judge causes " + listed)
    n = sum(r["calls"] for r in hit)
    what = ", ".join(f"{r['calls']} {r['cause']} ({r['host_ns'] / 1e6:.2f} ms)" for r in hit)
    offenders = [t for t in rep["top"] if t.get("cause") in rules.fail_causes]
    return RuleResult("no-long-calls-of-cause", n == 0,
                      f"{n} long call{'' if n == 1 else 's'} whose cause is {listed}" + (f": {what}" if hit else "") + "; allowed 0",
                      offenders if n else [])


@dataclass
class Verdict:
    path: str
    rules: list[RuleResult]

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.rules)

    def to_json(self) -> dict:
        # `accepted` only where a site was accepted in source: outputs without one are as before
        return {"path": self.path, "passed": self.passed,
                "rules": [{k: v for k, v in asdict(r).items() if k != "accepted" or v} for r in self.rules]}

    @classmethod
    def from_json(cls, d: dict) -> "Verdict":
        return cls(d["path"], [RuleResult(**r) for r in d["rules"]])


@dataclass
class GateResult:
    verdicts: list[Verdict]
    errors: list[tuple[str, str, int]] = field(default_factory=list)   # (path, message, exit code)

    @property
    def passed(self) -> bool:
        return not self.errors and all(v.passed for v in self.verdicts)

    @property
    def exit_code(self) -> int:
        """Bad input wins over a failed rule: 2 (or the input's own code), else 1 on a failure, else 0."""
        if self.errors:
            return max(c for _p, _m, c in self.errors)
        return 0 if self.passed else 1

    def to_json(self) -> dict:
        doc = {"passed": self.passed, "verdicts": [v.to_json() for v in self.verdicts]}
        if self.errors:
            doc["errors"] = [{"path": p, "error": m, "exit_code": c} for p, m, c in self.errors]
        return doc

    @classmethod
    def from_json(cls, d: dict) -> "GateResult":
        return cls([Verdict.from_json(v) for v in d["verdicts"]],
                   [(e["path"], e["error"], e["exit_code"]) for e in d.get("errors", [])])


# ------------------------------------------------------------------------------------ settings
def whole(v, key: str) -> int:
    """A count setting: a whole number 0 .. 2^62 (TOML's 1.5, inf, nan, true or "3" are refused, not rounded)."""
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 2 ** 62:
        raise ValueError(f"{key} is a whole number from 0 to 2^62")
    return v


def text(v) -> str:
    if not isinstance(v, str):
        raise ValueError("text in quotes")
    return v


def _shown(v) -> str:
    """A setting's value for a one-line message: short, whatever the file holds."""
    text = repr(v) if isinstance(v, (str, int, float, bool)) and len(str(v)) < 200 else f"<{type(v).__name__}>"
    return text.encode("ascii", "backslashreplace").decode()


@dataclass
class GateSettings:
    """Every gate setting, with its command-line default; `resolve` applies [tool.nsysh2d.gate]."""
    max_long_calls: int = 0
    count: str = "blocking"
    min_duration: int = 100_000
    max_blocked_per_step: int | None = None
    max_gpu_idle_per_step: int | None = None
    kinds: tuple = ()
    direction: str = "h2d"
    calls: str = "async"
    baseline: str | None = None
    tolerance: str = "10%"
    step_pattern: str = DEFAULT_STEP_PATTERN
    warmup_steps: int = 0
    fail_causes: tuple = ()
    source_root: str | None = None
    steady_after: str | None = None

    CONVERT = {"source_root": text, "warmup_steps": lambda v: whole(v, "warmup-steps"), "max_long_calls": lambda v: whole(v, "max-long-calls"), "count": text, "min_duration": parse_duration,
               "max_blocked_per_step": parse_duration, "max_gpu_idle_per_step": parse_duration, "direction": text, "calls": text, "baseline": text,
               "tolerance": lambda v: (parse_fraction(str(v)), str(v))[1],
               "step_pattern": text, "kinds": lambda v: tuple([v] if isinstance(v, str) else v),
               "fail_causes": lambda v: tuple([v] if isinstance(v, str) else v), "steady_after": text}

    @classmethod
    def resolve(cls, given: dict, from_command_line: set, conf: dict, conf_path) -> "GateSettings":
        """`given`: the command's values; a key of `conf` (pyproject, dashed names) wins unless the
        command line set that setting."""
        values = dict(given)
        for name, convert in cls.CONVERT.items():
            key = name.replace("_", "-")
            if name not in from_command_line and key in conf:
                try:
                    values[name] = convert(conf[key])
                except (TypeError, ValueError, OverflowError, RecursionError, NsysH2DError) as e:
                    raise NsysH2DError(f"{conf_path}: bad [tool.nsysh2d.gate] {key} = {_shown(conf[key])} ({e})") from None
        if "baseline" not in from_command_line and conf.get("baseline") and conf_path is not None:
            # A path in pyproject.toml is relative to that file, wherever the gate runs from.
            values["baseline"] = str(Path(conf_path).parent / str(conf["baseline"]))
        s = cls(**{k: v for k, v in values.items() if k in cls.CONVERT})
        s.kinds = check_kinds(s.kinds)
        parse_fraction(s.tolerance)
        for key, value, allowed in (("count", s.count, ("blocking", "long")), ("direction", s.direction, DIRECTIONS),
                                    ("calls", s.calls, CALLS)):
            if str(value).lower() not in allowed:
                raise NsysH2DError(f"{conf_path}: bad [tool.nsysh2d.gate] {key} = {_shown(value)} (use one of "
                                   f"{', '.join(allowed)})", EXIT_BAD_INPUT)
        s.count, s.direction, s.calls = s.count.lower(), s.direction.lower(), s.calls.lower()
        bad = [c for c in s.fail_causes if c not in CAUSES]
        if bad:
            where = "--fail-on-cause" if "fail_causes" in from_command_line else f"{conf_path}: [tool.nsysh2d.gate] fail-causes"
            raise NsysH2DError(f"{where}: unknown cause {bad[0]!r} (use one of {', '.join(CAUSES)})", EXIT_BAD_INPUT)
        return s

    def rules(self) -> Rules:
        return Rules(max_long_calls=self.max_long_calls, count=self.count,
                     max_blocked_per_step_ns=self.max_blocked_per_step,
                     max_gpu_idle_per_step_ns=self.max_gpu_idle_per_step, kinds=tuple(self.kinds),
                     tolerance=parse_fraction(self.tolerance), warmup_steps=self.warmup_steps,
                     fail_causes=tuple(self.fail_causes), source_root=self.source_root)

    def options(self) -> Options:
        return Options(min_ns=self.min_duration, direction=self.direction, top=20, step_pattern=self.step_pattern,
                       calls=self.calls, steady_after=self.steady_after).check()


def judge(reps, errors, settings: GateSettings) -> GateResult:
    """A verdict per report, computed with settings.options(); errors as (path, message, code): a report that
    failed is judged as not passing."""
    rules, base = settings.rules(), read_baseline(settings.baseline)
    return GateResult([Verdict(rep.path, gate(rep.to_json(), rules, base)) for rep in reps], list(errors))
