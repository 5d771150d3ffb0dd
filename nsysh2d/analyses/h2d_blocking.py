"""Long-blocking copies of one trace: totals, figures per grouping, the longest calls (the analyze report).

A typed result (Report) with to_json()/from_json(): the JSON contract of `analyze --format json`, the
cache payload and the source of a baseline. Per-step figures are derived in one place (Steps.per_step).
"""
from __future__ import annotations

# SQL in Python: one check that DuckDB accepts the step pattern (a $parameter).

import weakref
from dataclasses import dataclass, field, fields, replace

from ..errors import BadInput
from .options import API_GROUPS, Options, check_grouping, steps_in
from .spec import Spec
from .steady import apply

TOTAL_KEYS = ("calls", "long_calls", "blocking_calls", "long_ns", "blocking_ns", "bytes", "gpu_idle_ns")
# What per-step figures and the "outside steps" figures are made of (by_step rows).
STEP_KEYS = ("calls", "long_calls", "blocking_calls", "long_ns", "blocking_ns", "gpu_idle_ns")


@dataclass
class Steps:
    pattern: str
    steps: int
    step_ns: int
    not_counted: int = 0   # ranges matching the pattern that are no step (steps.sql): too short, or overlapping one
    steady: str | None = None   # --steady-after: where the steady state starts and what it left out, in words

    def per_step(self, value):
        return value / self.steps if self.steps and value is not None else None


@dataclass
class Totals:
    calls: int
    long_calls: int
    blocking_calls: int
    long_ns: int
    blocking_ns: int
    bytes: int
    gpu_idle_ns: int | None = 0          # GPU idle during the long calls (no kernel on the copy's device); None:
                                         # not computed for all of them (model.GPU_IDLE_MAX)
    # Per step: copies during step ranges only, over the number of steps; None without step ranges.
    long_ns_per_step: float | None = None
    blocking_ns_per_step: float | None = None
    blocking_calls_per_step: float | None = None
    gpu_idle_ns_per_step: float | None = None
    # Copies outside every step range (model init, warm-up, shutdown): not in the per-step figures.
    outside_steps_calls: int = 0
    outside_steps_long_calls: int = 0
    outside_steps_blocking_calls: int = 0
    outside_steps_long_ns: int = 0
    outside_steps_blocking_ns: int = 0
    outside_steps_gpu_idle_ns: int | None = 0
    # Calls of any direction whose kinds cannot be decoded: they cannot be judged (the gate fails).
    unclassified_calls: int = 0
    # Memcpy API calls without a GPU activity row: neither direction nor kinds are known; copy activity whose
    # call is missing or unnamed; calls merged by a shared correlationId. The gate fails on any of them.
    calls_without_activity: int = 0
    activity_without_call: int = 0
    merged_calls: int = 0
    # Copy activity issued before the capture began (its call precedes the trace): not counted, not judged.
    activity_before_capture: int = 0
    # Copy calls whose host start/end cannot be used (NULL, beyond 2^62 ns, ending before they start): a call
    # all the same, of unknown duration; the gate fails on them too.
    unusable_time_calls: int = 0
    disagreeing_calls: int = 0   # their runtime and backtrace rows disagree on the duration (copies_fold.sql)
    # The async/sync split of this direction, whatever --calls counts above (from by_api).
    async_calls: int = 0
    async_long_calls: int = 0
    async_long_ns: int = 0
    sync_calls: int = 0
    sync_long_calls: int = 0
    sync_long_ns: int = 0

    @classmethod
    def of(cls, kind_rows: list[dict], steps: Steps, api_rows=(), anomalies: dict | None = None,
           step_rows=()) -> "Totals":
        an = anomalies or {}
        sums = {k: _sum(kind_rows, k) for k in TOTAL_KEYS}
        split = {f"{side}_{k}": int(sum(r[k] or 0 for r in api_rows if bool(r["sync"]) == (side == "sync")))
                 for side in ("async", "sync") for k in ("calls", "long_calls", "long_ns")}
        inside = {k: _sum([r for r in step_rows if r["step"] is not None], k) for k in STEP_KEYS}
        outside = {f"outside_steps_{k}": _sum([r for r in step_rows if r["step"] is None], k) for k in STEP_KEYS}
        if not steps.steps:
            outside = {}
        per = {f"{k}_per_step": steps.per_step(inside[k]) for k in ("long_ns", "blocking_ns", "blocking_calls",
                                                                     "gpu_idle_ns")}
        return cls(**sums, **per, **outside,
                   unclassified_calls=an.get("unclassified", 0), calls_without_activity=an.get("no_activity", 0),
                   activity_without_call=an.get("orphans", 0), merged_calls=an.get("shared_correlation", 0),
                   activity_before_capture=an.get("before_capture", 0),
                   unusable_time_calls=an.get("bad_duration", 0), disagreeing_calls=an.get("disagreeing_rows", 0),
                   **split)


def _sum(rows, key):
    """GPU idle is NULL in a row where it is not known for every long call: then the sum is not known either."""
    if key.startswith("gpu_idle") and any(r.get(key) is None for r in rows):
        return None
    return int(sum(r[key] or 0 for r in rows))


@dataclass
class Report:
    path: str
    nsys_version: str | None
    schema_version: str | None
    gpu: str | None
    direction: str
    min_duration_ns: int
    steps: Steps
    totals: Totals
    by_kind: list[dict]
    groups: dict[str, list[dict]]      # grouping -> rows (the JSON's by_site, by_class, ...)
    top: list[dict]
    warnings: list[str] = field(default_factory=list)
    by_step: list[dict] = field(default_factory=list)   # per step ordinal (None: outside steps) and src kind
    calls: str = "async"                                 # which copy APIs the figures count (options.CALLS)
    by_api: list[dict] = field(default_factory=list)     # per copy API, sync and async whatever `calls` is
    python_backtrace: bool = False                       # captured with --python-backtrace (a warning says so)
    inconsistencies: list[str] = field(default_factory=list)   # the file contradicts itself (trace.py): gate fails
    format: str = "nsys-sqlite"                          # the input read: nsys-sqlite or kineto (torch.profiler)
    exported_with: str | None = None                     # a .nsys-rep input: the nsys that exported it here
    by_cause: list[dict] = field(default_factory=list)   # long calls per cause (analyses/by_cause.sql)
    by_process: list[dict] = field(default_factory=list)  # per process/rank (by_process.sql), when several

    def group(self, by: str) -> list[dict]:
        if by == "kind":
            return self.by_kind
        return self.by_api if by == "api" else self.groups[by]

    def to_json(self) -> dict:
        return {"path": self.path, "nsys_version": self.nsys_version, "schema_version": self.schema_version,
                "gpu": self.gpu, "direction": self.direction, "min_duration_ns": self.min_duration_ns,
                "steps": vars(self.steps).copy(), "totals": vars(self.totals).copy(), "by_kind": self.by_kind,
                **{f"by_{g}": rows for g, rows in self.groups.items()},
                "top": self.top, "warnings": self.warnings, "by_step": self.by_step, "calls": self.calls,
                "by_api": self.by_api, "python_backtrace": self.python_backtrace,
                "inconsistencies": self.inconsistencies, "format": self.format, "by_cause": self.by_cause,
                "by_process": self.by_process,
                **({"exported_with": self.exported_with} if self.exported_with else {})}

    @classmethod
    def from_json(cls, d: dict) -> "Report":
        """Raises KeyError/TypeError/AttributeError on a document of another shape."""
        known = {f.name for f in fields(cls)} - {"steps", "totals", "groups", "by_step", "by_api", "inconsistencies",
                                                 "format", "exported_with", "by_cause", "by_process"}
        groups = {k[3:]: v for k, v in d.items()
                  if k.startswith("by_") and k not in ("by_kind", "by_step", "by_api", "by_cause", "by_process")}
        if not all(isinstance(v, list) for v in [d["by_kind"], d["top"], *groups.values()]):
            raise TypeError("rows are not lists")
        return cls(**{k: d[k] for k in known}, steps=Steps(**d["steps"]),
                   totals=Totals(**d["totals"]), groups=groups, by_step=list(d["by_step"]), by_api=list(d["by_api"]),
                   inconsistencies=list(d.get("inconsistencies", [])), format=str(d.get("format", "nsys-sqlite")),
                   exported_with=d.get("exported_with"), by_cause=list(d.get("by_cause", [])),
                   by_process=list(d.get("by_process", [])))


def analyze(model, opts: Options, groups=API_GROUPS) -> Report:
    """The report of one copy model with these options."""
    opts = _with_steps(model, opts.check())
    from ..model.pipeline import stage   # lazy: model/source import duckdb; a cached result is read without it
    steady = apply(model, opts.steady_after)
    kinds = group_rows(model, "kind", opts)
    with stage("steps"):
        row = model.rows("analyses/steps", {"pattern": opts.step_pattern})[0]
    steps = Steps(opts.step_pattern, row["steps"], row["step_ns"], row["not_counted"], steady)
    meta = model.meta
    apis = api_rows(model, opts)
    with stage("by step"):
        by_step = model.rows("analyses/by_step", opts.params(pattern=opts.step_pattern))
    return Report(path=model.path, nsys_version=meta.get("nsys_version"), exported_with=meta.get("exported_with"),
                  schema_version=meta.get("schema_version"),
                  gpu=meta.get("gpu"), direction=opts.direction, min_duration_ns=opts.min_ns, steps=steps,
                  totals=Totals.of(kinds, steps, apis, model.anomalies, by_step), by_kind=kinds,
                  groups={g: group_rows(model, g, opts) for g in groups}, top=top_rows(model, opts),
                  warnings=model.warnings + [f"inconsistent trace: {i}" for i in model.inconsistencies] + ([
                      f"{steps.not_counted} ranges matching the step pattern are not counted as steps (shorter than "
                      "10 us, or overlapping an earlier step range of their process)"] if steps.not_counted else [])
                  + ([steady] if steady else []),
                  by_step=by_step, inconsistencies=model.inconsistencies,
                  calls=opts.calls, by_api=apis, python_backtrace=bool(meta.get("python_backtrace")),
                  format=meta.get("format", "nsys-sqlite"), by_cause=cause_rows(model, opts),
                  by_process=process_rows(model, opts))


def _backlog_rows(model, opts: Options, what: str, query: str, params: dict) -> list[dict]:
    """Rows of an analysis query that reads the backlog of the calls these options need (computed first)."""
    opts.check()
    model.ensure_backlog(opts.min_ns, opts.direction, opts.top)
    from ..model.pipeline import stage   # lazy: model/source import duckdb; a cached result is read without it
    with stage(what):
        return model.rows(query, params)


def cause_rows(model, opts: Options) -> list[dict]:
    """The long calls per cause, with their evidence (analyses/by_cause.sql)."""
    return _backlog_rows(model, opts, "by cause", "analyses/by_cause", opts.params())


def process_rows(model, opts: Options) -> list[dict]:
    """Figures per process (analyses/by_process.sql): each rank of a multi-process trace on its own; none when
    one process made every copy call (its figures are the totals)."""
    if model.rows("analyses/processes")[0]["n"] < 2:
        return []
    return _backlog_rows(model, opts, "by process", "analyses/by_process", opts.params(pattern=opts.step_pattern))


def group_rows(model, by: str, opts: Options) -> list[dict]:
    """Figures per group (analyses/summary.sql); every grouping comes from one pass, kept per options."""
    check_grouping(by)
    if by == "api":
        return api_rows(model, opts)
    opts = _with_steps(model, opts.check())
    cache = _memo(model)
    key = (opts.min_ns, opts.direction, opts.top, opts.calls, opts.step_pattern, opts.steady_after)
    if key not in cache:
        model.ensure_backlog(opts.min_ns, opts.direction, opts.top)
        from ..model.pipeline import stage   # lazy: model/source import duckdb; a cached result is read without it
        with stage("summaries"):
            cache[key] = model.rows("analyses/summary", opts.params(pattern=opts.step_pattern))
    drop = ("by", "group") if by == "kind" else ("by", "src_kind", "dst_kind")
    return [{k: v for k, v in r.items() if k not in drop} for r in cache[key] if r["by"] == by]


def top_rows(model, opts: Options) -> list[dict]:
    """The longest calls with everything that explains them (analyses/top.sql)."""
    opts = _with_steps(model, opts.check())
    return _backlog_rows(model, opts, "top calls", "analyses/top", opts.params(limit=opts.top, pattern=opts.step_pattern))


def api_rows(model, opts: Options) -> list[dict]:
    """Figures per copy API, synchronous and asynchronous (analyses/by_api.sql)."""
    return _backlog_rows(model, opts, "by api", "analyses/by_api", {"min_ns": opts.min_ns, "direction": opts.direction})


def _with_steps(model, opts: Options) -> Options:
    """The options with the step pattern this trace is read with (options.steps_in), checked and looked up once
    per pattern and model: analyze() and each group_rows() it makes ask."""
    key, memo = ("step pattern", opts.step_pattern), _memo(model)
    if key not in memo:
        check_pattern(model, opts.step_pattern)
        memo[key] = steps_in(model.rows, opts.step_pattern)
    return replace(opts, step_pattern=memo[key])


# Per model: analyses/summary.sql rows per option set (one pass serves every grouping) and each step pattern as
# the trace resolves it. Kept here, not on the model: the model holds no state of the analyses above it.
_MEMOS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _memo(model) -> dict:
    return _MEMOS.setdefault(model, {})


def check_pattern(model, pattern: str) -> None:
    """DuckDB's regular expressions (RE2) reject some that Python takes (look-behind, back-references)."""
    import duckdb   # lazy: a cached result is read without duckdb

    try:
        model.trace.con.execute("SELECT regexp_matches('', $p)", {"p": pattern})
    except duckdb.Error as e:
        raise BadInput(f"bad --step-pattern {pattern!r}: {str(e).splitlines()[0]} (RE2 syntax: no look-around, "
                       "no back-references)") from None


SPEC = Spec(lambda trace, opts, groups: analyze(trace.model, opts, groups), Report.to_json, Report.from_json)
