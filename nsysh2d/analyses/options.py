"""The vocabulary every layer shares: directions, groupings, the analysis options. Light: the CLI and
the warm (cached) path import it without DuckDB."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import BadInput
from .steady import parse

DIRECTIONS = ("h2d", "d2h", "all")
# Which copy APIs the figures count: asynchronous (cudaMemcpyAsync, cuMemcpyHtoDAsync_v2: the calls that
# should not block), synchronous (cudaMemcpy, cuMemcpyHtoD_v2: block by definition) or both.
CALLS = ("async", "sync", "all")


def left_out(calls: str) -> str | None:
    """The copy APIs a --calls value leaves out of the figures (sync for async, and back; none for all)."""
    return {"async": "sync", "sync": "async"}.get(calls)


# Every grouping, with its title in tables; the first is the default of `analyze --by`.
GROUPINGS = {"kind": "memory kind", "site": "call site", "class": "source class", "nvtx": "NVTX range",
             "stream": "stream", "api": "copy API"}
GROUPS = tuple(GROUPINGS)
REPORT_GROUPS = ("site", "class", "nvtx", "stream")   # what a CLI report (and its cache entry) carries
API_GROUPS = ("site", "class", "nvtx")                # Analysis.report's default
COMPARED_GROUPS = ("kind", "class", "site", "nvtx")   # what compare sets side by side
# Memory-kind labels of every ENUM_CUDA_MEM_KIND seen (queries/source/known_enums.sql has their ids).
MEMORY_KINDS = ("Pageable", "Pinned", "Device", "Array", "Managed", "Device Static", "Managed Static", "Unknown")
DEFAULT_MIN_NS = 100_000
DEFAULT_STEP_PATTERN = r"^step\b"
# What torch.profiler's prof.step() marks: the steps of a trace with no range the default pattern matches.
PROFILER_STEP_PATTERN = r"^ProfilerStep#\d+$"
MAX_PATTERN = 1000


@dataclass
class Options:
    min_ns: int = DEFAULT_MIN_NS
    direction: str = "h2d"
    top: int = 10
    calls: str = "async"
    step_pattern: str = DEFAULT_STEP_PATTERN
    steady_after: str | None = None   # --steady-after (analyses/steady.py)

    def check(self) -> "Options":
        if self.direction not in DIRECTIONS:
            raise BadInput(f"bad direction {self.direction!r}: use one of {', '.join(DIRECTIONS)}")
        if self.calls not in CALLS:
            raise BadInput(f"bad calls {self.calls!r}: use one of {', '.join(CALLS)}")
        # The pattern is DuckDB's (RE2, linear time: h2d_blocking.check_pattern compiles it there); Python's
        # re, which backtracks, never compiles or runs it (a pattern may come from the checkout's pyproject).
        if not isinstance(self.step_pattern, str) or len(self.step_pattern) > MAX_PATTERN:
            raise BadInput(f"bad --step-pattern: at most {MAX_PATTERN} characters of text")
        if not self.step_pattern.isprintable() or not self.step_pattern.encode("utf-8", "replace").decode() == self.step_pattern:
            raise BadInput(f"bad --step-pattern {self.step_pattern!r}: control characters or text that is not UTF-8")
        if self.steady_after:
            parse(self.steady_after)
        return self

    def params(self, **extra) -> dict:
        """The $parameters of the analyses' queries."""
        return {"min_ns": self.min_ns, "direction": self.direction, "calls": self.calls, **extra}


def steps_in(rows, pattern: str) -> str:
    """The step pattern a trace is read with: `pattern`, or ProfilerStep#N where `pattern` is the default and
    matches no range of the trace but those ranges are there (a torch.profiler schedule's steps). Never both:
    a trace with "step" ranges and ProfilerStep#N ones would count each step twice. `rows` runs a query on the
    trace (after the nvtx step)."""
    if pattern != DEFAULT_STEP_PATTERN:
        return pattern
    got = rows("analyses/step_pattern", {"pattern": pattern, "fallback": PROFILER_STEP_PATTERN})[0]
    return PROFILER_STEP_PATTERN if got["fallback"] and not got["own"] else pattern


def check_grouping(by: str) -> str:
    if by not in GROUPS:
        raise BadInput(f"bad grouping {by!r}: use one of {', '.join(GROUPS)}")
    return by


def check_kinds(kinds) -> tuple[str, ...]:
    """Memory-kind names as the file labels them, matched case-insensitively; unknown ones are an error."""
    by_lower = {k.lower(): k for k in MEMORY_KINDS}
    out = []
    for k in kinds:
        if str(k).strip().lower() not in by_lower:
            raise BadInput(f"unknown memory kind {k!r}: use one of {', '.join(MEMORY_KINDS)}")
        out.append(by_lower[str(k).strip().lower()])
    return tuple(out)
