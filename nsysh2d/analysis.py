"""The library's facade: `nsysh2d.open(path)` returns an Analysis of one trace, with one method per analysis
(as HTA's TraceAnalysis offers one per analysis of a trace folder). The CLI, the process pool, Dask and the
nsys recipe compute every job through these methods (runner/jobs.py).

    a = nsysh2d.open("run.sqlite")
    a.copies()                      # polars: one row per copy call, attributed, with its backlog
    a.result(Options())             # typed Report (analyses/h2d_blocking.py)
    a.report(Options())             # the same as the JSON contract (a dict)
    a.by_group("site", Options())   # polars: the `--by site` table
    a.top(Options())                # polars: the longest calls
    a.threshold()                   # ThresholdResult of a workloads/h2d_sweep.py trace
    a.api_summary()                 # every CUDA API function's calls and host times (dict; no copy model)
    a.range_times()                 # RangeTimes: wall time of every NVTX range (no copy model)
    a.close()

The file is read when a method first needs it: the copy model (the costly part) once, for every method that
reads copies; api_summary and range_times read the file on their own and never build it. Damage found in
the file while reading it is one BadInput naming it (source/files.damage_is_bad_input).
"""
from __future__ import annotations

from .analyses import h2d_blocking
from .analyses.api_summary import api_summary
from .analyses.options import (  # noqa: F401 - the library's public names
    API_GROUPS, DEFAULT_MIN_NS, DEFAULT_STEP_PATTERN, DIRECTIONS, GROUPS, Options,
)
from .analyses.range_times import TOP, RangeTimes, range_times
from .analyses import registry
from .model import CopyModel
from .source.files import damage_is_bad_input
from .units import format_bytes, format_ns, parse_duration  # noqa: F401


class Analysis:
    """One trace and every analysis of it, one method each; close() when done (or leave it to the process's end)."""

    def __init__(self, path: str, nsys: str | None = None, use_cache: bool = True, threads: int | None = None):
        """nsys: the binary that exports a .nsys-rep; use_cache=False: neither read nor write the cache folder
        (a .nsys-rep is then exported to a folder removed on close); threads: DuckDB's (default cpus.py's)."""
        self.path, self.nsys, self.use_cache, self.threads = str(path), nsys, use_cache, threads
        self._model: CopyModel | None = None

    @classmethod
    def open(cls, path: str, **kwargs) -> "Analysis":
        return cls(path, **kwargs)

    # ------------------------------------------------------------------ the copy model, built once
    @property
    def model(self) -> CopyModel:
        if self._model is None:
            with damage_is_bad_input(self.path):
                self._model = CopyModel.open(self.path, nsys=self.nsys, threads=self.threads,
                                             use_cache=self.use_cache)
        return self._model

    @property
    def trace(self):
        """The opened trace (DuckDB views n.*, tables of the model)."""
        return self.model.trace

    @property
    def warnings(self) -> list[str]:
        return self.model.warnings

    def ensure_backlog(self, *args, **kwargs) -> None:
        self.model.ensure_backlog(*args, **kwargs)

    # ------------------------------------------------------------------ analyses of the copies
    def copies(self):
        return self.model.copies()

    def run(self, name: str, opts: Options | None = None, groups=()):
        """Any analysis by its registered name (analyses/registry.py): what a Job computes."""
        found = registry.spec(name)
        with damage_is_bad_input(self.path):
            return found.compute(self, opts or Options(), tuple(groups or ()))

    def __getattr__(self, name: str):
        """A registered analysis without a method of its own here is still one: `a.NAME(opts, groups)`."""
        if name.startswith("_") or name.replace("_", "-") not in registry.ANALYSES:
            raise AttributeError(name)
        return lambda opts=None, groups=(): self.run(name.replace("_", "-"), opts, groups)

    def result(self, opts: Options, groups=API_GROUPS) -> h2d_blocking.Report:
        return self.run("report", opts, groups)

    def report(self, opts: Options, groups=API_GROUPS) -> dict:
        return self.result(opts, groups).to_json()

    def by_group(self, by: str, opts: Options):
        import polars as pl   # lazy: the report path (analyze) never loads polars (0.13 s)

        return pl.DataFrame(h2d_blocking.group_rows(self.model, by, opts))

    def by_kind(self, opts: Options):
        return self.by_group("kind", opts)

    def top(self, opts: Options):
        import polars as pl   # lazy: as in by_group

        return pl.DataFrame(h2d_blocking.top_rows(self.model, opts))

    def threshold(self):
        """The payload thresholds of a workloads/h2d_sweep.py trace (analyses/threshold.py)."""
        return self.run("threshold")

    # ------------------------------------------------------------------ analyses without the copy model
    def api_summary(self) -> dict:
        """{"path", "rows": [...]}: every CUDA API function's calls and host-time statistics, as `nsys stats -r
        cuda_api_sum` (analyses/api_summary.py)."""
        return self.run("api-summary")

    def range_times(self, step_pattern: str = DEFAULT_STEP_PATTERN, top: int = TOP) -> RangeTimes:
        """The wall time of every NVTX range (the steps as one row) and the CUDA API calls inside it."""
        return range_times(self.path, self.nsys, self.use_cache, step_pattern, top)

    def close(self) -> None:
        if self._model is not None:
            self._model.close()
            self._model = None
