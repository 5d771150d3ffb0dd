"""Wall time of the NVTX ranges of one trace, and the CUDA API calls inside them (what `compare` puts beside
the copies: a fix that removes a blocking copy can still make its range slower, e.g. `.pin_memory()` paying
cudaHostAlloc and a host copy). Only the trace's NVTX ranges and its API table are read: no copy model."""
from __future__ import annotations

from dataclasses import dataclass, field

from .function_times import function_times
from .options import steps_in
from .spec import Spec

TOP = 30   # range names kept besides the steps (the most total wall time first)


@dataclass
class RangeTimes:
    path: str
    step_pattern: str
    ranges: list[dict]                 # name ('' = the step ranges), is_step, count, total_ns, median_ns, p90_ns,
    left_out: int = 0                  # max_ns, kernel_gpu_ns, apis: [{api, calls, total_ns, gpu_ns}]; names not kept
    warnings: list[str] = field(default_factory=list)
    functions: list[dict] = field(default_factory=list)   # Kineto: per Python function (function_times.py)

    def to_json(self) -> dict:
        return {"path": self.path, "step_pattern": self.step_pattern, "ranges": self.ranges,
                "left_out": self.left_out, "warnings": self.warnings, "functions": self.functions}

    @classmethod
    def from_json(cls, d: dict) -> "RangeTimes":
        if not isinstance(d.get("ranges"), list) or not all(isinstance(r.get("apis"), list) for r in d["ranges"]):
            raise TypeError("not range times")
        if not isinstance(d.get("functions", []), list):
            raise TypeError("not range times")
        return cls(d["path"], d["step_pattern"], d["ranges"], int(d["left_out"]), list(d.get("warnings", [])),
                   list(d.get("functions", [])))


def range_times(path: str, nsys: str | None, use_cache: bool, step_pattern: str, top: int = TOP) -> RangeTimes:
    from ..model.pipeline import PIPELINE, run_step   # lazy: model/source import duckdb; a cached result is read without it
    from ..source import open_input   # lazy: model/source import duckdb; a cached result is read without it

    with open_input(path, nsys=nsys, use_cache=use_cache) as trace:
        run_step(trace, next(s for s in PIPELINE if s.name == "nvtx"))
        step_pattern = steps_in(trace.rows, step_pattern)
        trace.run("analyses/range_sel", {"pattern": step_pattern, "top": top})
        rows = trace.rows("analyses/range_times", {"pattern": step_pattern})
        apis: dict[tuple[str, bool], list[dict]] = {}
        for r in trace.rows("analyses/range_apis"):
            apis.setdefault((r["name"], r["is_step"]), []).append(
                {"api": r["api"], "calls": r["calls"], "total_ns": r["total_ns"], "gpu_ns": r["gpu_ns"]})
        left_out = rows[0]["left_out"] if rows else 0
        ranges = []
        for r in rows:
            mine = apis.get((r["name"], r["is_step"]), [])
            # the GPU time of the kernels launched from inside the range (what a UVA read slows, say)
            ranges.append({k: v for k, v in r.items() if k != "left_out"}
                          | {"kernel_gpu_ns": sum(a["gpu_ns"] for a in mine), "apis": mine})
        return RangeTimes(trace.source or trace.path, step_pattern, ranges, int(left_out or 0),
                          list(trace.warnings), function_times(trace))


SPEC = Spec(lambda trace, opts, groups: range_times(trace.path, trace.nsys, trace.use_cache, opts.step_pattern),
            RangeTimes.to_json, RangeTimes.from_json)
