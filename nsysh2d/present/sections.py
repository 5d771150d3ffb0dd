"""What each command shows, as sections (tables with notes and lines), built from typed results."""
from __future__ import annotations

from ..analyses.options import GROUPINGS, left_out
from ..source.inputs import named
from ..units import format_bytes, format_ns, plural
from .causes import LAUNCH_QUEUE_FIX, cause_section
from .ci import fix_lines, offender_line, shown_note
from .processes import process_section
from .render import Column, Section, cell
from .safe import Line, Trusted, terminal

STAT_COLUMNS = [
    Column("calls", "calls", "int"), Column("long_calls", "long", "int"),
    Column("blocking_calls", "blocking", "int"), Column("long_ns", "long time", "ns"),
    Column("blocking_ns", "blocked", "ns"), Column("gpu_idle_ns", "GPU idle", "ns", drop=1),
    Column("p50_ns", "p50", "ns", drop=3), Column("p99_ns", "p99", "ns", drop=4), Column("max_ns", "max", "ns"),
    Column("bytes", "bytes", "bytes", drop=2),
]


def report_heading(report) -> str:
    rep = report.to_json()
    steps = rep["steps"]["steps"]
    source = named(rep.get("format")).heading(rep)
    return (f"{rep['path']}  ({source}, schema {rep.get('schema_version') or '?'}, "
            f"{rep.get('gpu') or 'GPU ?'}; {steps} step range{'s' if steps != 1 else ''})")


def analyze_sections(report, by: str = "kind", show_top: bool = True) -> list[Section]:
    rep = report.to_json()
    t = rep["totals"]
    per_step = "" if t.get("blocking_ns_per_step") is None else (
        f"; per step: {format_ns(t['blocking_ns_per_step'])} blocked, {format_ns(t.get('gpu_idle_ns_per_step'))} GPU idle")
    outside = "" if not t.get("outside_steps_long_calls") else (
        f" Outside steps (not per step): {t['outside_steps_long_calls']} long "
        f"({format_ns(t['outside_steps_long_ns'])}, GPU idle {format_ns(t['outside_steps_gpu_idle_ns'])}).")
    calls = rep.get("calls", "async")
    what = {"async": "async memcpy calls", "sync": "synchronous memcpy calls", "all": "memcpy calls (sync and async)"}
    note = (f"{rep['direction']} {what[calls]}; long = host-side duration >= {format_ns(rep['min_duration_ns'])}; "
            f"blocking = long and waited for the GPU (returned after its own GPU copy started, or lasted "
            f">= half the backlog queued ahead). "
            f"Total: {t['long_calls']} long ({format_ns(t['long_ns'])}), {t['blocking_calls']} blocking "
            f"({format_ns(t['blocking_ns'])}); GPU idle during long calls {format_ns(t.get('gpu_idle_ns'))}"
            f"{per_step}.{outside}")
    other = left_out(calls)
    if other and t.get(f"{other}_calls"):
        note += (f" Not counted here: {plural(t[f'{other}_calls'], f'{other} copy call')} ({t[f'{other}_long_calls']} long, "
                 f"{format_ns(t[f'{other}_long_ns'])}); --calls {other} or --calls all counts them.")
    if by == "api":
        sec = api_section(rep, note)
    elif by == "kind":
        sec = Section("by source/destination memory kind",
                      [Column("src_kind", "src kind"), Column("dst_kind", "dst kind")] + STAT_COLUMNS,
                      rep["by_kind"], note=note)
    else:
        sec = Section(f"by {GROUPINGS[by]}", [Column("group", GROUPINGS[by]), Column("src_kinds", "src kinds", drop=4)]
                      + STAT_COLUMNS, rep[f"by_{by}"], note=note)
    sections = [sec]
    apis = rep.get("by_api") or []
    if by != "api" and (len(apis) > 1 or any(r["sync"] for r in apis)):
        sections.append(api_section(rep))
    if show_top:
        sections.append(Section(
            f"longest calls (top {len(rep['top'])})",
            [Column("host_ns", "host", "ns"), Column("bytes", "bytes", "bytes", drop=2),
             Column("source_class", "class"), Column("waited_s", "waited"),
             Column("backlog_ns", "backlog", "ns"), Column("gpu_idle_ns", "GPU idle", "ns", drop=1),
             Column("wait_ns", "wait", "ns", drop=3),
             Column("api", "API", drop=5), Column("where", "call site"), Column("nvtx_path", "NVTX path")],
            [{**r, "where": r.get("site_line") or r.get("site"), "waited_s": waited_cell(r)} for r in rep["top"]],
            note="backlog: time from the call until the GPU work queued ahead of it on its stream drained; "
                 "GPU idle: time during the call when its device ran no kernel (the copy's own transfer is idle "
                 "time); wait: call start -> its GPU copy start."))
        fixes = []
        full = [r for r in rep["top"] if r.get("cause") == "launch_queue"]
        if full:   # the calls that waited for a slot, not for the GPU: one line, whatever their class
            fixes.append(Line("queue full: {} of these calls (waited: queue) waited for a slot ({}+ launches ahead on "
                              "their stream had not started; a stream holds 1021): {}", Trusted(str(len(full))),
                              Trusted(str(min(r["queued_ahead"] for r in full))), Trusted(QUEUE_FULL_FIX)))
        for r in rep["top"]:
            if r.get("waited_for_gpu") and r.get("fix"):
                line = Line("fix {} [{}]: {}", r.get("site") or r.get("nvtx_range") or Trusted("(call site unknown)"),
                            r["source_class"], Trusted(r["fix"]))
                if line not in fixes:
                    fixes.append(line)
        sections[-1].lines = fixes
    for extra in (cause_section(rep) if show_top else None, process_section(rep)):
        if extra is not None:
            sections.append(extra)
    if rep.get("warnings"):
        sections[-1].lines += [f"warning: {w}" for w in rep["warnings"]]
    return sections


QUEUE_FULL_FIX = LAUNCH_QUEUE_FIX + " (docs/why-non-blocking-blocks.md)"


def waited_cell(r: dict) -> str:
    """yes: it waited for the GPU work queued ahead (analyses' waited_for_gpu); queue: it waited for a slot in its
    stream's full queue (top.sql's cause launch_queue); no: neither explains it."""
    if r.get("waited_for_gpu"):
        return "yes"
    return "queue" if r.get("cause") == "launch_queue" else "no"


def api_section(rep: dict, note: str | None = None) -> Section:
    """Figures per copy API, sync and async alike (whatever --calls counts elsewhere)."""
    return Section("by copy API (synchronous and asynchronous)", [
        Column("api", "API"), Column("sync_s", "sync"), Column("calls", "calls", "int"),
        Column("long_calls", "long", "int"), Column("blocking_calls", "blocking", "int"),
        Column("long_ns", "long time", "ns"), Column("gpu_idle_ns", "GPU idle", "ns", drop=1),
        Column("p50_ns", "p50", "ns", drop=3), Column("max_ns", "max", "ns"), Column("bytes", "bytes", "bytes", drop=2)],
        [{**r, "sync_s": "sync" if r["sync"] else "async"} for r in rep.get("by_api") or []],
        note=note or "sync copy APIs return only after the copy, so they always wait for the GPU work queued "
                     "ahead of them; --calls sync|all counts them in the figures above.")


def compare_sections(comparison) -> list[Section]:
    """Side-by-side tables of a comparison (analyses/compare.py)."""
    result = comparison.to_json()
    per_step = result["per_step"]
    t = result["totals"]
    if per_step:
        ls = ("blocking_ns_per_step_before", "blocking_ns_per_step_after", "per step",
              "gpu_idle_ns_per_step_before", "gpu_idle_ns_per_step_after")
    else:
        ls = ("blocking_ns_before", "blocking_ns_after", "total", "gpu_idle_ns_before", "gpu_idle_ns_after")
    total_rows = [{"what": "copies", "before": t["calls_before"], "after": t["calls_after"], "kind": "int"},
                  {"what": "long copies", "before": t["long_calls_before"], "after": t["long_calls_after"]},
                  {"what": "long-blocking copies", "before": t["blocking_calls_before"],
                   "after": t["blocking_calls_after"]},
                  {"what": "host time in long copies", "before": t["long_ns_before"], "after": t["long_ns_after"],
                   "unit": "ns"},
                  {"what": "host time blocked (long-blocking copies)", "before": t["blocking_ns_before"],
                   "after": t["blocking_ns_after"], "unit": "ns"},
                  {"what": "GPU idle during long copies", "before": t.get("gpu_idle_ns_before"),
                   "after": t.get("gpu_idle_ns_after"), "unit": "ns"}]
    if per_step:
        total_rows.append({"what": "host time blocked per step", "before": t["blocking_ns_per_step_before"],
                           "after": t["blocking_ns_per_step_after"], "unit": "ns"})
        total_rows.append({"what": "long-blocking copies per step", "before": t["blocking_calls_per_step_before"],
                           "after": t["blocking_calls_per_step_after"], "unit": "float"})
        total_rows.append({"what": "GPU idle per step (during long copies)", "before": t.get("gpu_idle_ns_per_step_before"),
                           "after": t.get("gpu_idle_ns_per_step_after"), "unit": "ns"})
    for r in total_rows:
        kind = r.get("unit", "int")
        r["before_s"], r["after_s"] = cell(r["before"], kind), cell(r["after"], kind)
        r["delta_s"] = _signed(r["after"] - r["before"], kind) if None not in (r["before"], r["after"]) else "-"
    b, a = result["before"], result["after"]
    secs = [Section("totals", [Column("what", "figure"), Column("before_s", "before"), Column("after_s", "after"),
                               Column("delta_s", "delta", "num")],
                    total_rows, note=f"before: {b['steps']} steps, after: {a['steps']} steps"
                    + ("; per-step figures normalize runs of different length" if per_step else ""))]
    if result.get("not_comparable"):   # analyses/comparable.py: the tables below set nothing alike side by side
        secs[0].lines = [f"NOT COMPARABLE: {w}" for w in result["not_comparable"]]
    titles = {"kind": "memory kind (src -> dst)", "class": "source class", "site": "call site", "nvtx": "NVTX range"}
    for g in ("kind", "class", "site", "nvtx"):
        rows = result.get(f"by_{g}")
        if rows is None:
            continue
        secs.append(Section(f"by {titles[g]}", [
            Column("key", titles[g]), Column("calls_before", "calls before", "int"),
            Column("calls_after", "calls after", "int"),
            Column("blocking_calls_before", "blocking before", "int", drop=3),
            Column("blocking_calls_after", "blocking after", "int", drop=3),
            Column(ls[0], f"blocked {ls[2]} before", "ns"), Column(ls[1], f"blocked {ls[2]} after", "ns"),
            Column("delta_s", "delta", "num"),
            Column(ls[3], f"GPU idle {ls[2]} before", "ns", drop=1), Column(ls[4], f"GPU idle {ls[2]} after", "ns", drop=1),
            Column("max_ns_before", "max before", "ns", drop=2), Column("max_ns_after", "max after", "ns", drop=2),
            Column("status", "status")],
            [{**r, "delta_s": _signed((r.get(ls[1]) or 0) - (r.get(ls[0]) or 0), "ns")} for r in rows]))
    lines = [f"gone: {d['group']} {d['key']} ({d['blocking_calls_before']} long-blocking copies before)"
             for d in result["disappeared"]]
    lines += [f"NEW: {d['group']} {d['key']} ({d['blocking_calls_after']} long-blocking copies after)"
              for d in result["appeared"]]
    secs[-1].lines = lines or ["no long-blocking call site or kind disappeared or appeared"]
    if result.get("ranges") is not None:
        secs.append(ranges_section(result))
    return secs


def range_label(r: dict):
    """A range row's name; the steps' row (is_step) is named by us."""
    return Trusted("(steps)") if r["is_step"] else r["name"]


def ranges_section(result: dict) -> Section:
    """Wall time per occurrence of each NVTX range name (the steps as one row), before and after, the API
    calls that grew inside a range, and the pinning-cost findings (analyses/compare.py: compare_ranges)."""
    rows = [{**r, "range": range_label(r),
             "delta_s": _signed(r["median_ns_delta"], "ns") if r["median_ns_delta"] is not None else "-"}
            for r in result["ranges"]]
    lines = []
    for r in result["ranges"]:   # the calls that grew, in the ranges that got slower (JSON: every range)
        if (r["median_ns_delta"] or 0) > 0.05 * (r["median_ns_before"] or 0):
            for g in r["grew"][:3]:
                lines.append(Line("grew inside {}: {} {} -> {} calls, {} -> {}", range_label(r), g["api"],
                                  Trusted(str(g["calls_before"])), Trusted(str(g["calls_after"])),
                                  Trusted(cell(g["total_ns_before"], "ns")), Trusted(cell(g["total_ns_after"], "ns"))))
    findings = result.get("range_findings") or []
    for f in findings:
        lines.append(Line("slower with {} growing: {} ({} -> {} median)", ", ".join(f["apis"]), range_label(f),
                          Trusted(cell(f["median_ns_before"], "ns")), Trusted(cell(f["median_ns_after"], "ns"))))
    if findings:
        lines.append(Line("fix: {}", Trusted(findings[0]["fix"])))
    return Section("NVTX range wall time (per occurrence)", [
        Column("range", "NVTX range"), Column("count_before", "n before", "int"), Column("count_after", "n after", "int"),
        Column("median_ns_before", "median before", "ns"), Column("median_ns_after", "median after", "ns"),
        Column("delta_s", "delta", "num"), Column("p90_ns_before", "p90 before", "ns", drop=1),
        Column("p90_ns_after", "p90 after", "ns", drop=1), Column("total_ns_before", "total before", "ns", drop=2),
        Column("total_ns_after", "total after", "ns", drop=2),
        Column("kernel_gpu_ns_before", "kernels GPU before", "ns", drop=3),
        Column("kernel_gpu_ns_after", "kernels GPU after", "ns", drop=3)], rows,
        note="end - start of each range on its thread; kernels GPU: GPU time of the kernels launched inside it; "
             "grew: CUDA API host time per occurrence up >= 10% and >= 10 us",
        lines=lines)


def _signed(value, kind: str) -> str:
    """A difference with its sign: +1.20 ms, -3, 0."""
    if not value:
        return "0"
    return ("+" if value > 0 else "-") + cell(abs(value), kind)


def combined_section(reports) -> Section:
    """One row per report. Copy calls of the API kind --calls leaves out (sync, or async) are counted in a
    column of their own, never dropped without a word."""
    def other(r, k):
        side = left_out(r.calls)
        return getattr(r.totals, f"{side}_{k}") if side else 0

    keys = ("calls", "long_calls", "blocking_calls", "long_ns", "other_long_calls", "other_long_ns", "steps")
    rows = [{"path": r.path, **{k: getattr(r.totals, k) for k in ("calls", "long_calls", "blocking_calls", "long_ns")},
             "other_long_calls": other(r, "long_calls"), "other_long_ns": other(r, "long_ns"),
             "steps": r.steps.steps} for r in reports]
    total = {"path": "(all)", **{k: sum(r[k] for r in rows) for k in keys}}
    cols = [Column("path", "report"), Column("calls", "calls", "int"), Column("long_calls", "long", "int"),
            Column("blocking_calls", "blocking", "int"), Column("long_ns", "long time", "ns")]
    if total["other_long_calls"]:
        cols += [Column("other_long_calls", "long, not counted", "int"),
                 Column("other_long_ns", "their time", "ns")]
    note = ("not counted: long copy calls of the other API kind than --calls counts (sync when it counts async); "
            "--calls all counts both") if total["other_long_calls"] else ""
    return Section("combined", cols + [Column("steps", "steps", "int")], rows + [total], note=note)


def threshold_section(result: list[dict]) -> Section:
    rows = []
    for r in result:
        sp = r["spread_bytes"]
        never = "no backlog to wait for" if r["undetermined"] else "never waits"
        rows.append({**r, "threshold": format_bytes(r["threshold_bytes"]) if r["threshold_bytes"] else never,
                     "below": format_bytes(r["below_bytes"]) if r["below_bytes"] else "-",
                     "spread": f"{format_bytes(sp[0])} .. {format_bytes(sp[1])}" if sp else "-",
                     "ratio": f"{r['blocked_over_backlog']:.2f}" if r["blocked_over_backlog"] else "-",
                     "backlog": f"{r['backlog_us'] / 1000:g} ms"})
    return Section("payload threshold per series", [
        Column("variant", "variant"), Column("backlog", "backlog"), Column("inflight", "in flight", "int"),
        Column("below", "largest not waiting"), Column("threshold", "threshold (waits from)"),
        Column("spread", "spread over repeats"), Column("ratio", "host / backlog when waiting")], rows,
        note="waits: the call took at least half of the GPU backlog measured at the call; threshold: smallest "
             "payload from which on most repeats wait; repeats with no backlog left at the call cannot tell.")


def gate_text(result) -> str:
    """The gate's terminal verdict: PASS/FAIL per report, each rule, its first offenders."""
    t = terminal   # a path, rule message or offender may hold a name from the trace
    out = []
    for v in result.to_json()["verdicts"]:
        out.append(f"{'PASS' if v['passed'] else 'FAIL'}  {t(v['path'])}")
        for r in v["rules"]:
            out.append(f"  [{'pass' if r['passed'] else 'FAIL'}] {t(r['name'])}: {t(r['message'])}")
            out += [f"      {offender_line(o, fix=False)}" for o in r["offenders"][:10]]
            out += [f"      ({n})" for n in [shown_note(r, 10)] if n]
            out += [f"    {ln}" for ln in fix_lines(r["offenders"][:10])]
    out += [f"ERROR {t(p)}: not judged (see stderr)" for p, _m, _c in result.errors]
    return "\n".join(out) + "\n"


def check_section(doc: dict) -> Section:
    """`nsysh2d check`: the copies the runtime checker saw, per call site and source class."""
    return Section(
        "runtime check: non_blocking H2D copies",
        [Column("where", "call site"), Column("source_class", "class"), Column("flagged", "blocks", "bool"),
         Column("calls", "calls", "int"), Column("bytes", "bytes", "bytes")],
        [{**r, "where": r.get("site_line") or r["site"]} for r in doc["by_site"]],
        note=f"{doc['flagged']} of {doc['checked']} copies would wait for the GPU work queued ahead of them "
             "(pageable source, or pinned through a pageable temporary).",
        lines=[Line("fix {} [{}]: {}", r["site_line"] or r["site"], r["source_class"], Trusted(r["fix"]))
               for r in doc["by_site"] if r["flagged"]]
        + [Line("race {}: {} writes pinned memory that the non_blocking copy at {} may not have read yet: {}",
                r["site_line"] or r["site"] or Trusted("(no Python frame)"), r["op"],
                r["copy_site_line"] or r["copy_site"] or Trusted("(no Python frame)"), Trusted(r["fix"]))
           for r in doc.get("rewrites", [])]
        + [Line("accepted in source {}: {}", r.get("site_line") or r.get("site"), r["accepted"])
           for r in doc.get("accepted", [])])
