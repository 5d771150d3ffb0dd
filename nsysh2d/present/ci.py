"""What CI systems read: JUnit XML, a Markdown step summary, GitHub Actions annotations."""
from __future__ import annotations

import xml.etree.ElementTree as ET


def offender_line(o: dict) -> str:
    from ..units import format_bytes, format_ns

    if "host_ns" in o:
        where = o.get("site_line") or o.get("site") or o.get("nvtx_range") or "?"
        return (f"{format_ns(o['host_ns'])} {o.get('source_class')} copy of {format_bytes(o.get('bytes'))} at {where}"
                f" (NVTX {o.get('nvtx_path') or '-'}): {o.get('fix') or ''}")
    return ", ".join(f"{k}={v}" for k, v in o.items())


def junit(verdicts: list[dict], errors: list[dict] = ()) -> str:
    """One test suite per report, one test case per rule; a report that could not be read is an error case."""
    suites = ET.Element("testsuites", name="nsysh2d gate")
    for e in errors:
        s = ET.SubElement(suites, "testsuite", name=f"nsysh2d gate: {e['path']}", tests="1", failures="0",
                          errors="1", skipped="0")
        case = ET.SubElement(s, "testcase", classname="nsysh2d.gate", name="read-report")
        ET.SubElement(case, "error", message=e["error"], type="bad-input").text = e["error"]
    for v in verdicts:
        rules = v["rules"]
        s = ET.SubElement(suites, "testsuite", name=f"nsysh2d gate: {v['path']}", tests=str(len(rules)),
                          failures=str(sum(not r["passed"] for r in rules)), errors="0", skipped="0")
        for r in rules:
            case = ET.SubElement(s, "testcase", classname="nsysh2d.gate", name=r["name"])
            if not r["passed"]:
                f = ET.SubElement(case, "failure", message=r["message"], type="regression")
                f.text = "\n".join(offender_line(o) for o in r["offenders"]) or r["message"]
            else:
                ET.SubElement(case, "system-out").text = r["message"]
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def summary_markdown(verdicts: list[dict], errors: list[dict] = ()) -> str:
    out = ["## nsysh2d gate", ""]
    for e in errors:
        out += [f"**ERROR** `{e['path']}`: {e['error'].replace('|', '/')} (not judged)", ""]
    for v in verdicts:
        out.append(f"**{'PASS' if v['passed'] else 'FAIL'}** `{v['path']}`")
        out += ["", "| rule | result | detail |", "|---|---|---|"]
        for r in v["rules"]:
            out.append(f"| {r['name']} | {'pass' if r['passed'] else '**fail**'} | {r['message'].replace('|', '/')} |")
        offenders = [o for r in v["rules"] if not r["passed"] for o in r["offenders"]]
        if offenders:
            out += ["", "Offending copies:", ""] + [f"- {offender_line(o)}" for o in offenders[:20]]
        out.append("")
    return "\n".join(out) + "\n"


def github_annotations(verdicts: list[dict]) -> str:
    lines = []
    for v in verdicts:
        for r in v["rules"]:
            if not r["passed"]:
                msg = r["message"] + "".join(f"%0A{offender_line(o)}" for o in r["offenders"][:10])
                lines.append(f"::error title=nsysh2d gate {r['name']}::{v['path']}: {msg}")
    return "\n".join(lines) + ("\n" if lines else "")
