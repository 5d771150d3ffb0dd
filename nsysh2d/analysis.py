"""The library's facade: `nsysh2d.open(path)` returns an Analysis of one trace.

    a = nsysh2d.open("run.sqlite")
    a.copies()                      # polars: one row per copy call, attributed, with its backlog
    a.result(Options())             # typed Report (analyses/h2d_blocking.py)
    a.report(Options())             # the same as the JSON contract (a dict)
    a.by_group("site", Options())   # polars: the `--by site` table
"""
from __future__ import annotations

from .analyses import h2d_blocking
from .analyses.options import (  # noqa: F401 - the library's public names
    API_GROUPS, DEFAULT_MIN_NS, DEFAULT_STEP_PATTERN, DIRECTIONS, GROUPS, Options,
)
from .model import CopyModel
from .units import format_bytes, format_ns, parse_duration  # noqa: F401


class Analysis:
    def __init__(self, model: CopyModel):
        self.model = model
        self.trace = model.trace
        self.warnings = model.warnings

    @classmethod
    def open(cls, path: str, **kwargs) -> "Analysis":
        return cls(CopyModel.open(path, **kwargs))

    def copies(self):
        return self.model.copies()

    def ensure_backlog(self, *args, **kwargs) -> None:
        self.model.ensure_backlog(*args, **kwargs)

    def result(self, opts: Options, groups=API_GROUPS) -> h2d_blocking.Report:
        return h2d_blocking.analyze(self.model, opts, groups)

    def report(self, opts: Options, groups=API_GROUPS) -> dict:
        return self.result(opts, groups).to_json()

    def by_group(self, by: str, opts: Options):
        import polars as pl

        return pl.DataFrame(h2d_blocking.group_rows(self.model, by, opts))

    def by_kind(self, opts: Options):
        return self.by_group("kind", opts)

    def top(self, opts: Options):
        import polars as pl

        return pl.DataFrame(h2d_blocking.top_rows(self.model, opts))

    def close(self) -> None:
        self.model.close()
