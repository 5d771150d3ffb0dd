"""`--format html`: one self-contained page per command (inline CSS and SVG figures, no script, nothing
loaded from elsewhere). Every figure shown in a table cell carries its raw value as data-value, and every
mark in a plot its raw figures (plots.py), so a test can read the page against the JSON."""
from __future__ import annotations

from ..units import format_ns
from . import plots, safe
from .ci import fix_lines, offender_line, shown_note
from .render import Column, cell
from .sections import compare_sections, report_heading, threshold_section, waited_cell

CSS = """
body{font:13px/1.4 system-ui,sans-serif;margin:1.5em auto;max-width:1100px;color:#222}
h1{font-size:18px}h2{font-size:15px;margin-top:1.6em;border-bottom:1px solid #ddd}h3{font-size:13px}
table{border-collapse:collapse;margin:.5em 0}td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}.note{color:#555}.fail{color:#b00;font-weight:bold}
.pass{color:#070;font-weight:bold}.warn{color:#850}figure{margin:.6em 0}svg{max-width:100%;height:auto}
"""


def esc(v) -> str:
    return safe.html(v)


def page(title: str, body: list[str]) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
            f'<meta name="generator" content="nsysh2d"><style>{CSS}</style></head>\n<body>\n<h1>{esc(title)}</h1>\n'
            + "\n".join(body) + "\n</body></html>\n")


def table(columns: list[Column], rows: list[dict], tid: str) -> str:
    head = "".join(f"<th>{esc(c.title)}</th>" for c in columns)
    out = [f'<table id="{esc(tid)}"><thead><tr>{head}</tr></thead><tbody>']
    for r in rows:
        tds = []
        for c in columns:
            v = r.get(c.key)
            num = c.kind in ("int", "ns", "bytes", "float", "num")
            raw = f' data-value="{esc(v)}"' if num and v is not None and c.kind != "num" else ""
            tds.append(f'<td data-key="{esc(c.key)}"{raw}{" class=num" if num else ""}>{esc(cell(v, c.kind))}</td>')
        out.append("<tr>" + "".join(tds) + "</tr>")
    return "\n".join(out) + "</tbody></table>"


def figure(svg: str, fid: str, caption: str) -> str:
    return f'<figure id="{esc(fid)}">{svg}<figcaption class="note">{esc(caption)}</figcaption></figure>'


TOTALS = [("calls", "copy calls", "int"), ("long_calls", "long calls", "int"),
          ("blocking_calls", "long-blocking calls", "int"), ("long_ns", "host time in long calls", "ns"),
          ("blocking_ns", "host time blocked", "ns"), ("gpu_idle_ns", "GPU idle during long calls", "ns"),
          ("blocking_ns_per_step", "blocked per step", "ns"), ("gpu_idle_ns_per_step", "GPU idle per step", "ns"),
          ("outside_steps_long_calls", "long calls outside steps", "int")]
GROUP_COLUMNS = [Column("group", "group"), Column("calls", "calls", "int"), Column("long_calls", "long", "int"),
                 Column("blocking_calls", "blocking", "int"), Column("blocking_ns", "blocked", "ns"),
                 Column("gpu_idle_ns", "GPU idle", "ns"), Column("max_ns", "max", "ns"), Column("bytes", "bytes", "bytes")]
TOP_COLUMNS = [Column("host_ns", "host", "ns"), Column("bytes", "bytes", "bytes"), Column("source_class", "class"),
               Column("waited_s", "waited"), Column("backlog_ns", "backlog", "ns"),
               Column("gpu_idle_ns", "GPU idle", "ns"), Column("where", "call site"), Column("nvtx_path", "NVTX path"),
               Column("fix_ref", "fix")]   # a reference: each fix's text once, under the table


def analyze_html(reports, errors) -> str:
    body = []
    for i, rep in enumerate(r.to_json() for r in reports):
        t = rep["totals"]
        rows = [{"what": w, "value": t.get(k), "key": k, "kind": kind} for k, w, kind in TOTALS]
        body.append(f'<section class="report" id="report-{i}" data-path="{esc(rep["path"])}">'
                    f'<h2>{esc(report_heading(reports[i]))}</h2>')
        body.append('<table class="totals"><tbody>' + "".join(
            f'<tr><th>{esc(r["what"])}</th><td class=num data-figure="{r["key"]}" data-value="{esc(r["value"])}">'
            f'{esc(cell(r["value"], r["kind"]))}</td></tr>' for r in rows) + "</tbody></table>")
        body.append(f'<p class="note">{esc(rep["direction"])} copies; long = host time &ge; '
                    f'{esc(format_ns(rep["min_duration_ns"]))}; blocking = long and waited for the GPU; GPU idle = '
                    'time during a call when its device ran no kernel; per step = copies during step ranges only.</p>')
        top = rep["top"]
        if top:
            body.append(figure(plots.timeline(top), f"timeline-{i}", f"the {len(top)} longest copies (--top); "
                               "hover a mark for size, call site and NVTX path"))
        for g, title in (("site", "call site"), ("class", "source class")):
            grp = [r for r in rep.get(f"by_{g}", []) if r["long_calls"]]
            if grp:
                body.append(figure(plots.bars(grp, "group", [("blocking_ns", "host time blocked"),
                                                             ("gpu_idle_ns", "GPU idle")],
                                              f"by {title}", f"bars-{g}-{i}"), f"bars-{g}-{i}", f"long copies by {title}"))
        body.append("<h3>Longest calls and their fixes</h3>")
        fixes = list(dict.fromkeys((r.get("source_class"), r["fix"]) for r in top if r.get("fix")))
        body.append(table(TOP_COLUMNS, [{**r, "where": r.get("site_line") or r.get("site"), "waited_s": waited_cell(r),
                                         "fix_ref": f"[{fixes.index((r.get('source_class'), r['fix'])) + 1}]"
                                         if r.get("fix") else ""} for r in top], f"top-{i}"))
        body += [f'<p class="note">[{n}] {esc(cls)}: {esc(text)}</p>' for n, (cls, text) in enumerate(fixes, 1)]
        body.append("<h3>By call site</h3>" + table(GROUP_COLUMNS, rep.get("by_site", []), f"by-site-{i}"))
        body += [f'<p class="warn">warning: {esc(w)}</p>' for w in rep.get("warnings", [])]
        body.append("</section>")
    body += [f'<p class="fail">not analyzed: {esc(p)}: {esc(m)}</p>' for p, m, _c in errors]
    return page("nsysh2d analyze: long-blocking host-to-device copies" if not reports or reports[0].direction != "d2h"
                else "nsysh2d analyze: long-blocking device-to-host copies", body)


def compare_html(comparison, before: str, after: str) -> str:
    doc = comparison.to_json()
    per = "per step" if doc["per_step"] else "total"
    key = "_per_step" if doc["per_step"] else ""
    body = [f'<p>before: <code>{esc(before)}</code> ({doc["before"]["steps"]} steps), after: <code>{esc(after)}</code>'
            f' ({doc["after"]["steps"]} steps)</p>']
    body += [f'<p class="fail">NOT COMPARABLE: {esc(w)}</p>' for w in doc.get("not_comparable") or []]
    totals = compare_sections(comparison)[0]
    body.append(table(totals.columns, totals.rows, "totals"))
    series = doc.get("steps_series") or {}
    if any(series.values()):
        body.append(figure(plots.steps_plot(series, "host time blocked per step"), "steps", "per step, before and after"))
    for g, title in (("site", "call site"), ("class", "source class"), ("kind", "memory kind")):
        rows = doc.get(f"by_{g}") or []
        if not rows:
            continue
        body.append(figure(plots.bars(rows, "key", [(f"blocking_ns{key}_before", "blocked before"),
                                                   (f"blocking_ns{key}_after", "blocked after")],
                                      f"host time blocked {per}, by {title}", f"bars-{g}"), f"bars-{g}",
                           f"by {title}: before and after"))
        cols = [Column("key", title), Column(f"blocking_ns{key}_before", f"blocked {per} before", "ns"),
                Column(f"blocking_ns{key}_after", f"blocked {per} after", "ns"),
                Column(f"blocking_ns{key}_delta" if key else "blocking_ns_delta", "delta", "ns"),
                Column(f"gpu_idle_ns{key}_before", "GPU idle before", "ns"),
                Column(f"gpu_idle_ns{key}_after", "GPU idle after", "ns"), Column("status", "status")]
        body.append(table(cols, rows, f"by-{g}"))
    body += [f'<p>gone: {esc(d["group"])} {esc(d["key"])}</p>' for d in doc["disappeared"]]
    body += [f'<p class="fail">NEW: {esc(d["group"])} {esc(d["key"])}</p>' for d in doc["appeared"]]
    return page("nsysh2d compare: before and after", body)


def threshold_html(result) -> str:
    sec = threshold_section(result.series)
    body = [f"<p><code>{esc(result.path)}</code></p>",
            figure(plots.threshold_plot(result.series), "threshold", "median host time per payload; dashed: the "
                   "threshold (smallest payload from which most repeats wait)"),
            table(sec.columns, sec.rows, "thresholds"), f'<p class="note">{esc(sec.note)}</p>']
    return page("nsysh2d threshold: payload from which copies wait", body)


def gate_html(result) -> str:
    doc = result.to_json()
    body = [f'<p class="{"pass" if doc["passed"] else "fail"}" id="verdict">{"PASS" if doc["passed"] else "FAIL"}</p>']
    for v in doc["verdicts"]:
        body.append(f'<h2 class="{"pass" if v["passed"] else "fail"}">{"PASS" if v["passed"] else "FAIL"} '
                    f'{esc(v["path"])}</h2><table class="rules"><tbody>')
        for r in v["rules"]:
            body.append(f'<tr data-rule="{esc(r["name"])}" data-passed="{str(r["passed"]).lower()}"><td class='
                        f'{"pass" if r["passed"] else "fail"}>{"pass" if r["passed"] else "FAIL"}</td>'
                        f'<td>{esc(r["name"])}</td><td>{esc(r["message"])}</td></tr>')
            notes = [offender_line(o, fix=False) for o in r["offenders"]] + [n for n in [shown_note(r, 20)] if n]
            body += [f'<tr><td></td><td></td><td class="note">{esc(n)}</td></tr>'
                     for n in notes + fix_lines(r["offenders"])]   # each fix once, not once per copy
        body.append("</tbody></table>")
    body += [f'<p class="fail">ERROR {esc(e["path"])}: {esc(e["error"])}</p>' for e in doc.get("errors", [])]
    return page("nsysh2d gate", body)
