"""One view per command result: what its JSON document holds, its CSV rows, its sections (terminal and
Markdown) and, where it has one, its HTML page. present.output(fmt, view) is the one format ladder; a new
command writes a view here (or reuses one) and never a ladder of its own."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..analyses.compare import Comparison
from .ci import summary_markdown
from .functions import cause_compare_section, functions_section
from .html import analyze_html, compare_html, gate_html, threshold_html
from .processes import rank_compare_section
from .render import Column, Section, render_sections
from .safe import Line, Trusted
from .sections import (analyze_sections, check_section, combined_section, compare_sections, gate_text, range_label,
                       report_heading, threshold_section)
from .variants import side_by_side_section


class View:
    """Defaults: the text formats render sections() under heading; a view with a layout of its own (several
    reports, the gate's verdict list) overrides text()."""
    heading = ""

    def document(self) -> dict:
        raise NotImplementedError

    def csv_rows(self) -> list[dict]:
        raise NotImplementedError

    def sections(self) -> list[Section]:
        raise NotImplementedError

    def html(self) -> str:
        raise NotImplementedError   # the commands' --format choices offer html only where a view has it

    def text(self, fmt: str) -> str:
        return render_sections(fmt, self.sections(), self.heading)


def _errors(errors) -> dict:
    return {"errors": [{"path": p, "error": m, "exit_code": c} for p, m, c in errors]} if errors else {}


# The CSV header of a table a report has no rows of (no copies): the same as a full one's, whose columns are
# its queries' (analyses/summary.sql, by_api.sql, top.sql; tests/test_trust_values.py checks them against a
# real export's). The report keeps a row of its own, path only, under that header.
_FIGURES = ("calls", "long_calls", "blocking_calls", "long_ns", "blocking_ns", "gpu_idle_ns", "total_ns", "p50_ns",
            "p99_ns", "max_ns", "bytes", "long_ns_in_steps", "blocking_calls_in_steps", "blocking_ns_in_steps",
            "gpu_idle_ns_in_steps", "src_kinds", "fix", "site_origins")
EMPTY_CSV_KEYS = {
    "kind": ("src_kind", "dst_kind", *_FIGURES), "group": ("group", *_FIGURES),
    "api": ("api", "sync", "calls", "long_calls", "blocking_calls", "long_ns", "blocking_ns", "gpu_idle_ns",
            "total_ns", "p50_ns", "max_ns", "bytes"),
    "calls": ("api_start_ns", "host_ns", "gpu_ns", "bytes", "src_kind", "dst_kind", "source_class", "waited_for_gpu",
              "site", "site_line", "nvtx_range", "nvtx_path", "api_name", "api", "sync", "pid", "tid", "device",
              "stream", "backlog_ns", "gpu_idle_ns", "wait_ns", "rest_ns", "queued_ahead", "cause", "evidence", "fix",
              "device_backlog_ns", "collective_ns_ahead", "step")}


@dataclass
class AnalyzeView(View):
    reports: list
    errors: list = field(default_factory=list)
    by: str = "kind"
    top: int = 10
    inputs: int = 0             # reports asked for (the INCOMPLETE line counts against it)
    csv_table: str = "groups"   # groups | calls | totals

    def document(self) -> dict:
        return {"reports": [r.to_json() for r in self.reports], **_errors(self.errors)}

    def csv_rows(self) -> list[dict]:
        # one table, each row with its report's path; a report without rows keeps a row of its own (path
        # only), so the file is never empty and no report vanishes from it
        if self.csv_table == "totals":
            return [{"path": r.path, "steps": r.steps.steps, **vars(r.totals)} for r in self.reports]
        table = {"calls": lambda r: r.top}.get(self.csv_table, lambda r: r.group(self.by))
        name = "calls" if self.csv_table == "calls" else self.by if self.by in ("kind", "api") else "group"
        empty = dict.fromkeys(EMPTY_CSV_KEYS[name])
        return [{"path": r.path, **row} for r in self.reports for row in (table(r) or [empty])]

    def html(self) -> str:
        return analyze_html(self.reports, self.errors)

    def text(self, fmt: str) -> str:
        parts = [render_sections(fmt, analyze_sections(r, self.by, show_top=self.top > 0), report_heading(r))
                 for r in self.reports]
        if len(self.reports) > 1:
            parts.append(render_sections(fmt, [combined_section(self.reports)]))
        if self.errors:
            parts.append(f"INCOMPLETE: {len(self.errors)} of {self.inputs} reports could not be analyzed (see stderr)\n")
        return "\n".join(parts)


@dataclass
class CompareView(View):
    comparison: object
    before: str
    after: str

    @property
    def heading(self) -> str:
        return f"{self.before}  ->  {self.after}"

    def document(self) -> dict:
        return {"compare": self.comparison.to_json()}

    def csv_rows(self) -> list[dict]:
        # one table: the totals, each grouping's rows and the NVTX range times, keyed by `by` and `key`

        doc = self.comparison.to_json()
        rows = [{"by": "totals", "key": "(all)", **doc["totals"]}]
        rows += [{"by": g, **row} for g in ("kind", "class", "site", "nvtx") for row in doc.get(f"by_{g}") or []]
        rows += [{"by": "range", "key": range_label(r), **{k: v for k, v in r.items() if k not in ("name", "grew")}}
                 for r in doc.get("ranges") or []]
        return [{"before": self.before, "after": self.after, **row} for row in rows]

    def html(self) -> str:
        return compare_html(self.comparison, self.before, self.after)

    def sections(self) -> list[Section]:
        doc = self.comparison.to_json()
        more = [rank_compare_section(doc), cause_compare_section(doc), functions_section(doc)]
        return compare_sections(self.comparison) + [s for s in more if s]


@dataclass
class CompareManyView(View):
    """Three or more traces: the side-by-side table, then the first trace against each other one."""
    comparison: object
    paths: list

    def document(self) -> dict:
        return {"compare": self.comparison.to_json()}

    def csv_rows(self) -> list[dict]:
        # the side-by-side table: one row per figure, one column per trace (its position)
        return [{"figure": r["figure"], "unit": r["unit"], **{str(i + 1): v for i, v in enumerate(r["values"])}}
                for r in self.comparison.to_json()["side_by_side"]]

    def text(self, fmt: str) -> str:
        doc = self.comparison.to_json()
        parts = [render_sections(fmt, [side_by_side_section(doc)])]
        parts += [CompareView(Comparison(p), self.paths[0], b).text(fmt) for p, b in zip(doc["pairs"], self.paths[1:])]
        return "\n".join(parts)


@dataclass
class CompareRanksView(View):
    """Two rank sets: the ranks side by side, then rank i (by name order) against rank i."""
    comparison: object
    paths: list      # the before ranks, then the after ranks

    def _views(self) -> list[CompareView]:
        pairs = self.comparison.to_json()["pairs"]
        return [CompareView(Comparison(p), self.paths[i], self.paths[len(pairs) + i]) for i, p in enumerate(pairs)]

    def document(self) -> dict:
        return {"compare": self.comparison.to_json()}

    def csv_rows(self) -> list[dict]:
        return [{"rank": i, **row} for i, v in enumerate(self._views()) for row in v.csv_rows()]

    def text(self, fmt: str) -> str:
        ranks = rank_compare_section(self.comparison.to_json())
        return "\n".join([render_sections(fmt, [ranks])] + [v.text(fmt) for v in self._views()])


@dataclass
class ThresholdView(View):
    result: object

    @property
    def heading(self) -> str:
        return self.result.path

    def document(self) -> dict:
        return self.result.to_json()

    def csv_rows(self) -> list[dict]:
        rows = []   # one row per series and payload size
        for s in self.result.to_json()["thresholds"]:
            base = {k: v for k, v in s.items() if k not in ("sizes", "median_host_ns")}
            rows += [{"path": self.result.path, **base, "bytes": b, "median_host_ns": ns}
                     for b, ns in zip(s["sizes"], s["median_host_ns"])]
        return rows

    def html(self) -> str:
        return threshold_html(self.result)

    def sections(self) -> list[Section]:
        return [threshold_section(self.result.series)]


@dataclass
class GateView(View):
    result: object

    def document(self) -> dict:
        return self.result.to_json()

    def html(self) -> str:
        return gate_html(self.result)

    def text(self, fmt: str) -> str:
        if fmt == "markdown":
            doc = self.result.to_json()
            return summary_markdown(doc["verdicts"], doc.get("errors", []))
        return gate_text(self.result)


@dataclass
class CheckView(View):
    report: dict   # RuntimeChecker.report()

    def document(self) -> dict:
        return {"runtime_check": self.report}

    def csv_rows(self) -> list[dict]:
        return self.report["by_site"]

    def sections(self) -> list[Section]:
        return [check_section(self.report)]


API_COLUMNS = [Column("time_pct", "time %", "float"), Column("total_ns", "total", "ns"), Column("calls", "calls", "int"),
               Column("avg_ns", "avg", "ns"), Column("median_ns", "median", "ns", drop=2),
               Column("min_ns", "min", "ns", drop=3), Column("max_ns", "max", "ns"),
               Column("stddev_ns", "stddev", "ns", drop=1), Column("name", "API function")]


@dataclass
class ApiSummaryView(View):
    docs: list
    errors: list = field(default_factory=list)

    def document(self) -> dict:
        return {"api_summary": self.docs, **_errors(self.errors)}

    def csv_rows(self) -> list[dict]:
        return [{"path": d["path"], **r} for d in self.docs for r in d["rows"]]

    def text(self, fmt: str) -> str:
        note = "time %: share of the API time listed, not of the run's wall time"

        def twins(rows):   # one name in several rows: say why (name_id in JSON tells them apart)
            return [Line("{} is in {} rows: the trace names it by {} string ids (e.g. a function and its _vNNNN "
                         "twin, shown without the suffix, as nsys stats does); each row counts the calls of one id",
                         n, Trusted(str(k)), Trusted(str(k))) for n, k in Counter(r["name"] for r in rows).items() if k > 1]
        return "\n".join(render_sections(fmt, [Section("CUDA API functions", API_COLUMNS, d["rows"], note=note,
                                                        lines=twins(d["rows"]))], d["path"]) for d in self.docs)
