"""What CI systems read: JUnit XML, a Markdown step summary, GitHub Actions annotations."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ..rules.sites import KINETO_DEF
from ..units import format_bytes, format_ns
from . import safe


def offender_line(o: dict, esc=safe.terminal, fix: bool = True) -> str:
    """One offending copy in words; `esc` makes its trace strings safe for the output it goes to (the fix
    text is ours). fix=False: without the fix, for a list that gives each fix once (fix_lines)."""

    if "host_ns" in o:
        where = o.get("site_line") or o.get("site") or o.get("nvtx_range")
        nvtx = f" (NVTX {esc(o['nvtx_path'])})" if o.get("nvtx_path") else ""
        return (f"{format_ns(o['host_ns'])} {esc(o.get('source_class'))} copy of {format_bytes(o.get('bytes'))} at "
                f"{esc(where) if where else '(call site unknown)'}{nvtx}" + (f": {o.get('fix') or ''}" if fix else ""))
    return ", ".join(f"{esc(k.replace('_', ' ').removesuffix(' ns'))} {_figure(k, v, esc)}" for k, v in o.items())


def _figure(key: str, value, esc) -> str:
    """A finding's figure in words: 15.17 ms, not long_ns=15167451."""

    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if key.endswith("_ns") or key.endswith("_ns_per_step"):
            return format_ns(value)
        if key == "bytes":
            return format_bytes(value)
    return esc(value)


def fix_lines(offenders: list[dict], esc=safe.terminal) -> list[str]:
    """Each distinct fix of these offenders once, with the source class it is for."""
    seen: dict[tuple, None] = {}
    for o in offenders:
        if o.get("fix"):
            seen.setdefault((o.get("source_class"), o["fix"]), None)
    return [f"fix [{esc(cls)}]: {text}" for cls, text in seen]


def shown_note(rule: dict, shown: int) -> str | None:
    """Says when a list of offending copies is cut: by us (`shown`) or by the report (its longest calls only)."""
    total = max(rule.get("offenders_total") or 0, len(rule["offenders"]))
    shown = min(shown, len(rule["offenders"]))
    return f"{shown} of {total} offending copies shown, the longest" if rule["offenders"] and total > shown else None


def junit(verdicts: list[dict], errors: list[dict] = ()) -> str:
    """One test suite per report, one test case per rule; a report that could not be read is an error case."""
    suites = ET.Element("testsuites", name="nsysh2d gate")
    x = safe.xml
    for e in errors:
        s = ET.SubElement(suites, "testsuite", name=f"nsysh2d gate: {x(e['path'])}", tests="1", failures="0",
                          errors="1", skipped="0")
        case = ET.SubElement(s, "testcase", classname="nsysh2d.gate", name="read-report")
        ET.SubElement(case, "error", message=x(e["error"]), type="bad-input").text = x(e["error"])
    for v in verdicts:
        rules = v["rules"]
        s = ET.SubElement(suites, "testsuite", name=f"nsysh2d gate: {x(v['path'])}", tests=str(len(rules)),
                          failures=str(sum(not r["passed"] for r in rules)), errors="0", skipped="0")
        for r in rules:
            case = ET.SubElement(s, "testcase", classname="nsysh2d.gate", name=x(r["name"]))
            if not r["passed"]:
                f = ET.SubElement(case, "failure", message=x(r["message"]), type="regression")
                offs = r["offenders"]   # each fix once, after the copies it is for
                f.text = "\n".join([offender_line(o, x, fix=False) for o in offs] + fix_lines(offs, x)
                                    + [n for n in [shown_note(r, len(offs))] if n]) or x(r["message"])
            else:
                ET.SubElement(case, "system-out").text = x(r["message"])
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def summary_markdown(verdicts: list[dict], errors: list[dict] = ()) -> str:
    """The gate's verdicts as Markdown (a step summary): every string from a trace or a path through
    safe.markdown, so none can add HTML, a heading, a verdict or a table row of its own."""
    md = safe.markdown
    out = ["## nsysh2d gate", ""]
    for e in errors:
        out += [f"**ERROR** {safe.markdown_code(e['path'])}: {md(e['error'])} (not judged)", ""]
    for v in verdicts:
        out.append(f"**{'PASS' if v['passed'] else 'FAIL'}** {safe.markdown_code(v['path'])}")
        out += ["", "| rule | result | detail |", "|---|---|---|"]
        for r in v["rules"]:
            out.append(f"| {md(r['name'])} | {'pass' if r['passed'] else '**fail**'} | {md(r['message'])} |")
        offenders = unique_offenders(v)
        if offenders:
            out += ["", "Offending copies:", ""] + [f"- {offender_line(o, md, fix=False)}" for o in offenders[:20]]
            if len(offenders) > 20 or any(r.get("offenders_total") for r in v["rules"]):
                total = max([len(offenders)] + [r.get("offenders_total") or 0 for r in v["rules"]])
                out += [f"- {min(20, len(offenders))} of {total} shown, the longest"] if total > min(20, len(offenders)) else []
            out += [""] + [f"- {ln}" for ln in fix_lines(offenders[:20], md)]
        out.append("")
    return "\n".join(out) + "\n"


def unique_offenders(verdict: dict) -> list[dict]:
    """The offending copies of a report's failed rules, each once (several rules name the same copies)."""
    seen, out = set(), []
    for r in verdict["rules"]:
        if r["passed"]:
            continue
        for o in r["offenders"]:
            key = o.get("api_start_ns"), o.get("tid"), o.get("site"), o.get("host_ns")
            if key not in seen:
                seen.add(key)
                out.append(o)
    return out


def github_annotations(verdicts: list[dict]) -> str:
    """One error per failed rule, and one on each source line (file=, line=) where an offending copy's
    Python call site is known, so that the pull request shows it at that line."""

    t, data, prop = safe.terminal, safe.annotation_data, safe.annotation_property
    lines = []
    for v in verdicts:
        for r in v["rules"]:
            if not r["passed"]:
                offs = r["offenders"][:10]   # each fix once, not once per copy
                msg = t(r["message"]) + "".join(f"\n{ln}" for ln in [offender_line(o, fix=False) for o in offs]
                                                + [n for n in [shown_note(r, 10)] if n] + fix_lines(offs))
                lines.append(f"::error title={prop('nsysh2d gate ' + r['name'])}::{data(t(v['path']) + ': ' + msg)}")
        at_line = {}
        for o in unique_offenders(v):
            m = re.fullmatch(r"(.+\.py):(\d+)", o.get("site_line") or "")
            k = KINETO_DEF.fullmatch(o.get("site_line") or "")
            if m:
                at_line.setdefault((m.group(1), m.group(2), None), []).append(o)
            elif k:   # a Kineto site: only the function's first line is known, and the annotation says so
                at_line.setdefault((k.group(1), k.group(3), k.group(2)), []).append(o)
        for (f, n, fn), offs in at_line.items():
            msg = f"{len(offs)} long-blocking copies here; longest: {offender_line(offs[0])}"
            title = "nsysh2d blocking H2D copy"
            if fn:
                title += f" in {fn}() (line {n} is where it starts: torch.profiler records no call line)"
                msg = f"{len(offs)} long-blocking copies inside {fn}(), which starts here; longest: {offender_line(offs[0])}"
            lines.append(f"::error file={prop(f)},line={n},title={prop(t(title))}::{data(msg)}")
    return "\n".join(lines) + ("\n" if lines else "")
