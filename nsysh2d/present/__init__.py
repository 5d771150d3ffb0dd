"""Presentation layer: what each command prints, in each format, from the analyses' typed results."""
from __future__ import annotations

from .render import Column, Section, cell, document, render_sections, rows_csv, to_json  # noqa: F401


def analyze_output(fmt: str, reports, errors, by: str, top: int, inputs: int, csv_table: str = "groups") -> str:
    if fmt == "json":
        extra = {"errors": [{"path": p, "error": m, "exit_code": c} for p, m, c in errors]} if errors else {}
        return document(reports=[r.to_json() for r in reports], **extra)
    if fmt == "csv":   # one table, each row with its report's path; a report without rows keeps a row of its
        # own (path only), so the file is never empty and no report vanishes from it
        if csv_table == "totals":
            return rows_csv([{"path": r.path, "steps": r.steps.steps, **vars(r.totals)} for r in reports])
        table = {"calls": lambda r: r.top}.get(csv_table, lambda r: r.group(by))
        return rows_csv([{"path": r.path, **row} for r in reports for row in (table(r) or [{}])])
    if fmt == "html":
        from .html import analyze_html
        return analyze_html(reports, errors)
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
    if fmt == "csv":   # one table: the totals, each grouping's rows and the NVTX range times, keyed by `by` and `key`
        doc = comparison.to_json()
        rows = [{"by": "totals", "key": "(all)", **doc["totals"]}]
        rows += [{"by": g, **row} for g in ("kind", "class", "site", "nvtx") for row in doc.get(f"by_{g}") or []]
        from .sections import range_label

        rows += [{"by": "range", "key": range_label(r), **{k: v for k, v in r.items() if k not in ("name", "grew")}}
                 for r in doc.get("ranges") or []]
        return rows_csv([{"before": before, "after": after, **row} for row in rows])
    if fmt == "html":
        from .html import compare_html
        return compare_html(comparison, before, after)
    from .processes import rank_compare_section
    from .sections import compare_sections

    sections = compare_sections(comparison)
    ranks = rank_compare_section(comparison.to_json())
    return render_sections(fmt, sections + ([ranks] if ranks else []), f"{before}  ->  {after}")


def compare_many_output(fmt: str, comparison, paths: list[str]) -> str:
    """Three or more traces: the side-by-side table, then the first trace against each other one."""
    from ..analyses.compare import Comparison

    doc = comparison.to_json()
    if fmt == "json":
        return document(compare=doc)
    if fmt == "csv":   # the side-by-side table: one row per figure, one column per trace (its position)
        return rows_csv([{"figure": r["figure"], "unit": r["unit"], **{str(i + 1): v for i, v in enumerate(r["values"])}}
                         for r in doc["side_by_side"]])
    from .variants import side_by_side_section

    parts = [render_sections(fmt, [side_by_side_section(doc)])]
    parts += [compare_output(fmt, Comparison(p), paths[0], b) for p, b in zip(doc["pairs"], paths[1:])]
    return "\n".join(parts)


def threshold_output(fmt: str, result) -> str:
    if fmt == "json":
        return document(**result.to_json())
    if fmt == "csv":   # one row per series and payload size
        rows = []
        for s in result.to_json()["thresholds"]:
            base = {k: v for k, v in s.items() if k not in ("sizes", "median_host_ns")}
            rows += [{"path": result.path, **base, "bytes": b, "median_host_ns": ns}
                     for b, ns in zip(s["sizes"], s["median_host_ns"])]
        return rows_csv(rows)
    if fmt == "html":
        from .html import threshold_html
        return threshold_html(result)
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
    if fmt == "html":
        from .html import gate_html
        return gate_html(result)
    return gate_text(result)


def gate_files(result, junit_path: str | None, summary_path: str | None, github: bool) -> str:
    """Writes the JUnit file and appends the step summary; returns the GitHub annotations to print."""
    from ..cache import append_output, write_output
    from .ci import github_annotations, junit, summary_markdown

    doc = result.to_json()
    verdicts, errors = doc["verdicts"], doc.get("errors", [])
    if junit_path:
        write_output(junit_path, junit(verdicts, errors))
    if summary_path:
        append_output(summary_path, summary_markdown(verdicts, errors))  # GitHub's step summary is appended to
    return github_annotations(verdicts) if github else ""


def check_output(fmt: str, doc: dict) -> str:
    if fmt == "json":
        return document(runtime_check=doc)
    if fmt == "csv":
        return rows_csv(doc["by_site"])
    from .sections import check_section

    return render_sections(fmt, [check_section(doc)])


def api_summary_output(fmt: str, docs: list[dict], errors) -> str:
    if fmt == "json":
        extra = {"errors": [{"path": p, "error": m, "exit_code": c} for p, m, c in errors]} if errors else {}
        return document(api_summary=docs, **extra)
    if fmt == "csv":
        return rows_csv([{"path": d["path"], **r} for d in docs for r in d["rows"]])
    cols = [Column("time_pct", "time %", "float"), Column("total_ns", "total", "ns"), Column("calls", "calls", "int"),
            Column("avg_ns", "avg", "ns"), Column("median_ns", "median", "ns", drop=2),
            Column("min_ns", "min", "ns", drop=3), Column("max_ns", "max", "ns"),
            Column("stddev_ns", "stddev", "ns", drop=1), Column("name", "API function")]
    return "\n".join(render_sections(fmt, [Section("CUDA API functions", cols, d["rows"], note="time %: share of "
                                                   "the API time listed, not of the run's wall time")], d["path"])
                     for d in docs)
