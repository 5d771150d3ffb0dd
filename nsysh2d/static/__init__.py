"""The static wing: `nsysh2d lint`, blocking host-to-device copies found in Python source before anything runs
(docs/lint.md). Standard library only: it runs on any machine, without torch, DuckDB or polars."""
from .lint import Finding, LintResult, Settings, lint  # noqa: F401
