"""Baselines: the findings of a trace stored to gate later traces against (`nsysh2d baseline`), and how a
trace's findings are matched with them. Only new or grown findings fail a gate with a baseline."""
from __future__ import annotations

import json
from dataclasses import dataclass

from ..errors import EXIT_BAD_INPUT, BadInput, NsysH2DError
from ..source.files import check_regular
from ..units import plural
from .comparable import incomparable
from .rules import RuleResult, Rules


def baseline_from(report, accept: str | None = None) -> dict:
    """The findings a baseline keeps of a Report (the baseline file's JSON)."""
    rep = report.to_json()
    keep = ("path", "nsys_version", "schema_version", "gpu", "format", "direction", "calls", "min_duration_ns", "steps",
            "totals", "by_kind", "by_site", "by_class", "by_nvtx")
    out = {"nsysh2d_baseline": 1, **{k: rep[k] for k in keep if k in rep}}
    if accept:
        out["accepted"] = accept
    return out


def in_words(report) -> str:
    """What a baseline of this Report accepts, for `nsysh2d baseline`'s one line."""
    sites = [s for s in report.groups["site"] if s["blocking_calls"]]
    known = sum(1 for s in sites if s["group"] != UNKNOWN_SITE)
    unknown = sum(s["blocking_calls"] for s in sites if s["group"] == UNKNOWN_SITE)
    return (f"{plural(report.totals.blocking_calls, 'long-blocking copy')} at "
            f"{plural(known, 'call site')}"
            + (f"; {unknown} without a call site in the trace (never accepted as a site: gates of traces "
               "without backtraces match NVTX ranges, or source classes)" if unknown else ""))


def read_baseline(path: str | None) -> dict | None:
    if not path:
        return None

    check_regular(path, "the baseline")
    try:
        with open(path, encoding="utf-8") as f:
            base = json.load(f, parse_constant=_no_constant, parse_int=_bounded_int)
    except OSError as e:
        raise NsysH2DError(f"{path}: cannot read baseline ({e.strerror})", EXIT_BAD_INPUT) from None
    except RecursionError:
        raise NsysH2DError(f"{path}: not a baseline file (values nested too deeply)", EXIT_BAD_INPUT) from None
    except _Refused as e:
        raise NsysH2DError(f"{path}: not a baseline as 'nsysh2d baseline' writes it ({e}); remake it",
                           EXIT_BAD_INPUT) from None
    except ValueError:
        raise NsysH2DError(f"{path}: not a baseline file (invalid JSON)", EXIT_BAD_INPUT) from None
    if not isinstance(base, dict) or base.get("nsysh2d_baseline") != 1:
        raise NsysH2DError(f"{path}: not a baseline written by 'nsysh2d baseline'", EXIT_BAD_INPUT)
    problem = _shape_problem(base)
    if problem:
        raise NsysH2DError(f"{path}: not a baseline as 'nsysh2d baseline' writes it ({problem}); remake it",
                           EXIT_BAD_INPUT)
    return base


class _Refused(ValueError):
    pass


def _no_constant(name: str):
    """NaN and Infinity are JSON to Python, never to 'nsysh2d baseline': a NaN time compares false with
    everything, which switched the growth rule off."""
    raise _Refused(f"{name} is not a number a baseline holds")


def _bounded_int(digits: str) -> int:
    """Integers of at most 19 digits (every figure fits INT64): thousands of digits are refused, not
    converted (the conversion is quadratic, and their quotients overflow a float)."""
    if len(digits.lstrip("-")) > 19:
        raise _Refused(f"an integer of {len(digits)} digits")
    return int(digits)


def _shape_problem(base: dict) -> str | None:
    """What is wrong with the fields the gate reads, or None."""
    number = (int, float)
    if not isinstance(base.get("min_duration_ns"), int) or not isinstance(base.get("direction"), str):
        return "min_duration_ns/direction missing"
    for key in ("by_site", "by_class", "by_nvtx", "by_kind"):
        rows = base.get(key, [])
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            return f"{key} is not a list of rows"
        for r in rows:
            if key != "by_kind" and not isinstance(r.get("group"), str):
                return f"a {key} row without a group name"
            for k in ("calls", "long_calls", "blocking_calls", "long_ns", "blocking_ns"):
                if k in r and (isinstance(r[k], bool) or not isinstance(r[k], number) or not 0 <= r[k] < 2 ** 63):
                    return f"{key} {k} = {r[k]!r}"
    steps = base.get("steps", {})
    if not isinstance(steps, dict) or not isinstance(steps.get("steps", 0), int) or isinstance(steps.get("steps"), bool) \
            or not 0 <= steps.get("steps", 0) < 2 ** 63:
        return "steps is not {steps: N}"
    if base.get("gpu") is not None and not isinstance(base["gpu"], str):
        return "gpu is not text"
    totals = base.get("totals", {})
    if not isinstance(totals, dict) or isinstance(totals.get("calls", 0), bool) or not isinstance(totals.get("calls", 0), int):
        return "totals is not {calls: N, ...}"
    if "accepted" in base and not isinstance(base["accepted"], str):
        return "accepted is not text"
    return None


UNKNOWN_SITE = "(no backtrace)"   # summary.sql's group of the copies whose call site the trace does not tell


@dataclass
class Match:
    """How findings of a trace are matched with a baseline's: by call site when both captures name sites the
    same way, else by NVTX range, else by source class (e.g. a baseline without backtraces and a trace with
    Python backtraces name no site alike)."""
    field: str      # the report's rows: by_site, by_nvtx or by_class
    title: str
    top_key: str    # the field of a top row holding the same key

    def key_of(self, top_row: dict):
        v = top_row.get(self.top_key)
        if self.field == "by_site":
            return v or UNKNOWN_SITE
        return v or "(no NVTX range)" if self.field == "by_nvtx" else v


def finding_match(baseline: dict, rep: dict, key: str) -> Match:
    def origins(d):
        rows = [r for r in d.get("by_site", []) if r.get(key)]
        if any("site_origins" not in r for r in rows):   # a baseline of an older nsysh2d: trust its sites
            return None
        return {o for r in rows for o in (r["site_origins"] or "none").split(",")}

    ob, on = origins(baseline), origins(rep)
    # Sites match only where both captures name some: copies of a trace without backtraces all fall in
    # one unknown site, which would accept any later copy without a backtrace.
    if ob is None or not ob or not on or (ob == on and ob != {"none"}):
        return Match("by_site", "call site", "site")
    named = lambda d: any(r.get(key) and r["group"] != "(no NVTX range)" for r in d.get("by_nvtx", []))  # noqa: E731
    if named(baseline) and named(rep):
        return Match("by_nvtx", "NVTX range", "nvtx_range")
    return Match("by_class", "source class", "source_class")


def against_baseline(rep, baseline, rules: Rules) -> list[RuleResult]:
    what, key, t_key = rules.what, rules.count_key, rules.time_key
    if (baseline.get("min_duration_ns") != rep["min_duration_ns"] or baseline.get("direction") != rep["direction"]
            or baseline.get("calls", "async") != rep.get("calls", "async")):
        raise BadInput("baseline was made with a different --min-duration/--direction/--calls; remake it")
    res = []
    why_not = incomparable(baseline, rep)
    if why_not:   # added only when failing, like classified-copies: a verdict on nothing alike cannot pass
        res.append(RuleResult("comparable-baseline", False, "this trace cannot be compared with the baseline: "
                              + "; ".join(why_not) + " (remake the baseline from this workload's trace)"))
    match = finding_match(baseline, rep, key)
    # An unknown site is no site: the baseline never accepts it (its copies are new in any later trace).
    base_sites = {r["group"]: r for r in baseline.get(match.field, [])
                  if not (match.field == "by_site" and r["group"] == UNKNOWN_SITE)}
    now_sites = {r["group"]: r for r in rep.get(match.field, []) if r[key]}
    new = [s for s in now_sites if not (base_sites.get(s, {}).get(key))]
    accepted = sum(1 for r in base_sites.values() if r.get(key))
    why = f"; the baseline accepts {plural(accepted, match.title)}" + (
        f": {baseline['accepted']}" if baseline.get("accepted") else "")
    if match.field != "by_site":
        why += f" (matched by {match.title}: the two captures name call sites differently)"
    res.append(RuleResult("no-new-sites", not new,
                      f"{plural(len(new), match.title)} with {key.replace('_', ' ')} not in the baseline"
                      + (": " + "; ".join(new) if new else "") + why,
                      [{"site": s, key: now_sites[s][key], "long_ns": now_sites[s]["long_ns"]} for s in new]))
    sb, sn = baseline.get("steps", {}).get("steps"), rep["steps"]["steps"]
    grown = []
    for s, r in now_sites.items():
        b = base_sites.get(s)
        if not b or not b.get(key):
            continue
        before = b[t_key] / sb if sb and sn else b[t_key]
        now = r[t_key] / sn if sb and sn else r[t_key]
        if now > before * (1 + rules.tolerance):
            grown.append({"site": s, "before_ns": before, "now_ns": now})
    unit = "per step" if sb and sn else "in total"
    res.append(RuleResult("no-growth", not grown,
                          f"{plural(len(grown), match.title)} whose {what} copy time {unit} grew more than "
                          f"{rules.tolerance * 100:g}% over the baseline", grown))
    return res
