"""Presentation layer: what each command prints, in each format, from the analyses' typed results."""
from __future__ import annotations

from .render import Column, Section, cell, document, render_sections, to_json  # noqa: F401


def analyze_output(fmt: str, reports, errors, by: str, top: int, inputs: int) -> str:
    if fmt == "json":
        extra = {"errors": [{"path": p, "error": m, "exit_code": c} for p, m, c in errors]} if errors else {}
        return document(reports=[r.to_json() for r in reports], **extra)
    from .sections import analyze_sections, combined_section, report_heading

    parts = [render_sections(fmt, analyze_sections(r, by, show_top=top > 0), report_heading(r)) for r in reports]
    if len(reports) > 1:
        parts.append(render_sections(fmt, [combined_section(reports)]))
    if errors:
        parts.append(f"INCOMPLETE: {len(errors)} of {inputs} reports could not be analyzed (see stderr)\n")
    return "\n".join(parts)


def compare_output(fmt: str, comparison, before: str, after: str) -> str:
    if fmt == "json":
        return document(compare=comparison.to_json())
    from .sections import compare_sections

    return render_sections(fmt, compare_sections(comparison), f"{before}  ->  {after}")


def threshold_output(fmt: str, result) -> str:
    if fmt == "json":
        return document(**result.to_json())
    from .sections import threshold_section

    return render_sections(fmt, [threshold_section(result.series)], result.path)


def gate_output(fmt: str, result) -> str:
    from .ci import summary_markdown
    from .sections import gate_text

    if fmt == "json":
        return document(**result.to_json())
    if fmt == "markdown":
        doc = result.to_json()
        return summary_markdown(doc["verdicts"], doc.get("errors", []))
    return gate_text(result)


def gate_files(result, junit_path: str | None, summary_path: str | None, github: bool) -> str:
    """Writes the JUnit file and appends the step summary; returns the GitHub annotations to print."""
    from ..run import atomic_write
    from .ci import github_annotations, junit, summary_markdown

    doc = result.to_json()
    verdicts, errors = doc["verdicts"], doc.get("errors", [])
    if junit_path:
        atomic_write(junit_path, junit(verdicts, errors))
    if summary_path:
        with open(summary_path, "a") as f:  # GitHub's step summary is appended to
            f.write(summary_markdown(verdicts, errors))
    return github_annotations(verdicts) if github else ""
