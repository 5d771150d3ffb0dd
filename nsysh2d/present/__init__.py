"""Presentation layer: what each command prints, in each format, from the analyses' typed results. Every
command hands output() a view (views.py) of its result: the one place a format is chosen."""
from __future__ import annotations

from ..cache import append_output, write_output
from .ci import github_annotations, junit, summary_markdown
from .lint import LintView  # noqa: F401
from .render import Column, Section, cell, document, render_sections, rows_csv, to_json  # noqa: F401
from .views import (AnalyzeView, ApiSummaryView, CheckView, CompareManyView, CompareRanksView, CompareView,  # noqa: F401
                    GateView, ThresholdView, View)


def output(fmt: str, view: View) -> str:
    """The text of a command's result in one format: json (the document envelope), csv (one loadable
    table), html (a page), or the sections as a terminal table or Markdown."""
    if fmt == "json":
        return document(**view.document())
    if fmt == "csv":
        return rows_csv(view.csv_rows())
    if fmt == "html":
        return view.html()
    return view.text(fmt)


def gate_files(result, junit_path: str | None, summary_path: str | None, github: bool) -> str:
    """Writes the JUnit file and appends the step summary; returns the GitHub annotations to print."""

    doc = result.to_json()
    verdicts, errors = doc["verdicts"], doc.get("errors", [])
    if junit_path:
        write_output(junit_path, junit(verdicts, errors))
    if summary_path:
        append_output(summary_path, summary_markdown(verdicts, errors))  # GitHub's step summary is appended to
    return github_annotations(verdicts) if github else ""
