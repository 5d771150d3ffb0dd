"""`nsysh2d lint` measured on real vLLM history (issue 57, part 2): recall over fixed sites, precision over
labelled findings, and the time for a whole release tree against the parse floor.

    python benchmarks/lint_vllm.py --nsysh2d /work/wt/lint/.venv/bin/nsysh2d
    python benchmarks/lint_vllm.py --nsysh2d "python -m nsysh2d.cli" --no-timing
    python benchmarks/lint_vllm.py --dump-findings /tmp/findings.json      # the sample to label

The releases are the `.py` files of vLLM wheels, unpacked as SRC/<version>/vllm/... (see docs/lint-vllm.md; no vLLM
code is kept in this repository). Ground truth: benchmarks/data/lint_vllm_sites.json; labels:
benchmarks/data/lint_vllm_labels.json. The linter runs as a subprocess (`CMD lint --format json PATH...`), so the
real command is what is measured.

Recall lints each release's whole tree (`vllm`), as a user would; --files-only lints just the sites' files.
A site counts as caught when, in the release before its fix, a finding of the expected class lies in the same file
inside the function's line span or within 3 lines of the bad copy; it is clean when, in the release after, no finding
of that class lies within 3 lines of the fixed copy (anywhere in the function where the copy is gone). The stricter
count, no finding of the class anywhere in the function after, is printed beside it: a long function can keep
another, still unfixed copy of the same class (vLLM fixed xdrope_positions next to M-RoPE only later, #53412). Recall =
sites caught-before-and-clean-after / sites.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLASSES = ("pageable", "pinned_strided", "pin_per_step", "rewrite_in_flight")
# the four classes by the linter's rule codes and names (H2D005, torch.tensor(..., device=cuda), is a copy
# from pageable memory too); a finding whose rule is none of these keeps its own name and matches no site
RULE_CLASS = {"H2D001": "pageable", "pageable-non-blocking": "pageable", "H2D005": "pageable",
              "pageable-device-tensor": "pageable", "H2D002": "pinned_strided", "pinned-strided-view": "pinned_strided",
              "H2D003": "pin_per_step", "pin-memory-per-step": "pin_per_step", "H2D004": "rewrite_in_flight",
              "pinned-rewrite-in-flight": "rewrite_in_flight"}
SAMPLE = 50
SEED = 57
PARSE_FLOOR = ("import ast,sys\nfor p in sys.argv[1:]:\n    with open(p, 'rb') as f:\n        ast.parse(f.read(), p)\n")


def versions(src: Path) -> list[str]:
    def key(v: str):
        return tuple(int(x) if x.isdigit() else 0 for x in v.split("."))
    return sorted((p.name for p in src.iterdir() if (p / "vllm").is_dir()), key=key)


def finding_list(doc) -> list[dict]:
    """The findings of one JSON document, whatever list key the linter put them under."""
    if isinstance(doc, list):
        return doc
    if isinstance(doc.get("lint"), dict):
        doc = doc["lint"]
    for k in ("findings", "results", "diagnostics", "violations"):
        if isinstance(doc.get(k), list):
            return doc[k]
    raise ValueError(f"no list of findings in the JSON (keys: {sorted(doc)})")


def norm(f: dict, root: Path) -> dict:
    """(file relative to the release root, line, class) of one finding."""
    loc = f.get("location") or {}
    path = f.get("path") or f.get("file") or f.get("filename") or loc.get("path") or loc.get("file")
    line = f.get("line") or f.get("row") or loc.get("line") or loc.get("row")
    if path is None or line is None:
        raise ValueError(f"finding without path or line: {f}")
    p = Path(path)
    p = p if p.is_absolute() else Path.cwd() / p
    try:
        rel = str(p.resolve().relative_to(root.resolve()))
    except ValueError:
        rel = str(path)
    code = str(f.get("code") or f.get("rule") or f.get("class") or "?")
    cls = RULE_CLASS.get(code) or RULE_CLASS.get(str(f.get("rule"))) or (code if code in CLASSES else str(f.get("rule")))
    return {"file": rel, "line": int(line), "rule": code, "class": cls, "message": str(f.get("message", ""))[:300]}


LINT_ARGS: list[str] = []  # --lint-args, e.g. ["--select", "ALL"]
FILES_ONLY = False  # --files-only: recall lints only the sites' files, not each release's whole tree


def lint(cmd: list[str], root: Path, paths: list[str]) -> tuple[list[dict], float, int]:
    """Run the linter once over paths (relative to root); its findings, wall seconds and exit status."""
    start = time.perf_counter()
    p = subprocess.run(cmd + ["lint", "--format", "json", *LINT_ARGS, *paths], cwd=root, capture_output=True, text=True)
    took = time.perf_counter() - start
    if p.returncode not in (0, 1):
        sys.exit(f"lint_vllm: `{shlex.join(cmd)} lint` in {root}: exit {p.returncode}: {p.stderr.strip()[:500]}")
    try:
        doc = json.loads(p.stdout) if p.stdout.strip() else []
        return [norm(f, root) for f in finding_list(doc)], took, p.returncode
    except (ValueError, AttributeError) as e:
        sys.exit(f"lint_vllm: cannot read the linter's JSON in {root}: {e}; stdout starts {p.stdout[:200]!r}")


def near(f: dict, span, line) -> bool:
    if span and span[0] <= f["line"] <= span[1]:
        return True
    return line is not None and abs(f["line"] - line) <= 3


def recall(cmd: list[str], src: Path, sites: list[dict]) -> tuple[list[tuple], dict]:
    per_release: dict[str, set[str]] = {}
    for s in sites:
        per_release.setdefault(s["release_before"], set()).add(s["file"])
        per_release.setdefault(s["release_after"], set()).add(s["file"])
    found = {}
    for ver, files in per_release.items():
        # the whole tree by default: facts about classes defined in other modules (a buffer class that pins in its
        # __init__) come from a first pass over the package, as in a real `nsysh2d lint vllm/` run
        present = sorted(f for f in files if (src / ver / f).is_file()) if FILES_ONLY else ["vllm"]
        found[ver] = lint(cmd, src / ver, present)[0] if present else []
    rows = []
    for s in sites:
        cls = s["expected_class"]
        before = [f for f in found[s["release_before"]] if f["file"] == s["file"] and f["class"] == cls
                  and near(f, s["function_span_before"], s["line_before"])]
        after = [f for f in found[s["release_after"]] if f["file"] == s["file"] and f["class"] == cls
                 and near(f, s["function_span_after"], s["line_after_if_any"])]
        # at the fixed copy: within 3 lines of it, or anywhere in the function where the copy is gone
        at_fix = [f for f in after if s["line_after_if_any"] is None or abs(f["line"] - s["line_after_if_any"]) <= 3]
        rows.append((s, bool(before), not at_fix, before, after, not after))
    return rows, found


def print_recall(rows) -> None:
    print(f"{'tier':<5} {'pr':<7} {'site':<62} {'class':<15} {'before':<7} {'flagged':<8} {'after':<7} {'clean':<6}")
    for s, flagged, clean, before, after, _ in rows:
        site = f"{s['file'].split('/')[-1]}:{s['line_before']} {s['function'].split('.')[-1]}"
        pr = s["pr"] if s["tier"] == "pr" else "-"
        print(f"{s['tier']:<5} {pr:<7} {site[:62]:<62} {s['expected_class']:<15} {s['release_before']:<7} "
              f"{'yes' if flagged else 'NO':<8} {s['release_after']:<7} {'yes' if clean else 'NO':<6}")
        if after:
            print(f"      after-release finding(s) of that class in the function at line(s) {[f['line'] for f in after]}"
                  f" (the fixed copy is at {s['line_after_if_any']})")
    for tier in ("pr", "diff", None):
        sel = [r for r in rows if tier is None or r[0]["tier"] == tier]
        if sel:
            ok = sum(1 for r in sel if r[1] and r[2])
            name = {"pr": "sites named in PR threads", "diff": "sites from the release diff", None: "all sites"}[tier]
            strict = sum(1 for r in sel if r[1] and r[5])
            print(f"recall ({name}): {ok}/{len(sel)} = {ok / len(sel):.0%} "
                  f"(flagged before {sum(r[1] for r in sel)}, clean after {sum(r[2] for r in sel)}; "
                  f"with no finding of the class anywhere in the function after: {strict}/{len(sel)})")


def sample(findings: list[dict]) -> list[dict]:
    ordered = sorted(findings, key=lambda f: (f["file"], f["line"], f["rule"]))
    return ordered if len(ordered) <= SAMPLE else sorted(random.Random(SEED).sample(ordered, SAMPLE),
                                                         key=lambda f: (f["file"], f["line"], f["rule"]))


def tally(findings: list[dict], labels: dict) -> tuple[dict, list[dict]]:
    """TRUE/FALSE counts by rule of the labelled findings, and the findings that have no label."""
    by_rule: dict[str, dict[str, int]] = {}
    unlabelled = []
    for f in findings:
        lab = labels.get((f["file"], f["line"], f["rule"]))
        if lab is None:
            unlabelled.append(f)
        else:
            by_rule.setdefault(f["rule"], {"TRUE": 0, "FALSE": 0})[lab["label"]] += 1
    return by_rule, unlabelled


def print_tally(name: str, by_rule: dict, unlabelled: list[dict], commit: str) -> None:
    print(f"{name}:\n{'rule':<18} {'true':>5} {'false':>6}")
    for rule, c in sorted(by_rule.items()):
        print(f"{rule:<18} {c['TRUE']:>5} {c['FALSE']:>6}")
    true = sum(c["TRUE"] for c in by_rule.values())
    judged = true + sum(c["FALSE"] for c in by_rule.values())
    if judged:
        print(f"precision ({name}): {true}/{judged} = {true / judged:.0%} (labels: {commit})")
    if unlabelled:
        print(f"unlabelled: {len(unlabelled)} finding(s) have no label (findings changed since labelling?):")
        for f in unlabelled[:20]:
            print(f"  {f['file']}:{f['line']} {f['rule']}")


def precision(findings: list[dict], labels_path: Path, ver: str) -> None:
    picked = sample(findings)
    print(f"\nprecision on {ver}: {len(findings)} findings, {len(picked)} in the labelled sample (seed {SEED})")
    if not labels_path.is_file():
        print(f"no labels file {labels_path}: precision not computed")
        return
    doc = json.loads(labels_path.read_text())
    labels = {(x["file"], x["line"], x["rule"]): x for x in doc["labels"]}
    if doc.get("release") and doc["release"] != ver:
        print(f"note: labels were made on {doc['release']}, findings here are from {ver}")
    commit = doc.get("linter_commit", "?")
    print_tally("sample", *tally(picked, labels), commit)
    if len(picked) < len(findings):
        by_rule, unlabelled = tally(findings, labels)
        if not unlabelled:
            print_tally("every finding", by_rule, unlabelled, commit)
        else:
            print(f"every finding: {len(unlabelled)} of {len(findings)} unlabelled, precision over all not computed")


def cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timing(cmd: list[str], src: Path, ver: str, reps: int) -> None:
    """Wall and CPU seconds (user + sys of the process and the workers it waited for) of the whole-tree lint and of
    the parse floor, runs interleaved; CPU time moves less than wall time when other work shares the cores."""
    root = src / ver
    files = sorted(str(p.relative_to(root)) for p in (root / "vllm").rglob("*.py"))
    runs: dict[str, list[tuple[float, float]]] = {"floor": [], "lint": []}
    n = 0
    for _ in range(reps):
        c0 = cpu_children()
        found, took, _rc = lint(cmd, root, ["vllm"])
        runs["lint"].append((took, cpu_children() - c0))
        n = len(found)
        c0, start = cpu_children(), time.perf_counter()
        p = subprocess.run([sys.executable, "-c", PARSE_FLOOR, *files], cwd=root, capture_output=True, text=True)
        runs["floor"].append((time.perf_counter() - start, cpu_children() - c0))
        if p.returncode != 0:
            sys.exit(f"lint_vllm: parse floor failed: {p.stderr.strip()[:300]}")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\ntiming: vllm {ver}, {len(files)} .py files, {n} findings; {os.cpu_count()} cores, load average {load}; "
          f"median of {reps} runs")
    print(f"{'command':<52} {'wall s':>7} {'cpu s':>7}  wall runs")
    names = {"floor": "parse floor: python ast.parse over every file",
             "lint": "nsysh2d lint --format json " + shlex.join(LINT_ARGS + ["vllm"])}
    med = {}
    for k in ("floor", "lint"):
        med[k] = (statistics.median(w for w, _ in runs[k]), statistics.median(c for _, c in runs[k]))
        print(f"{names[k]:<52} {med[k][0]:7.2f} {med[k][1]:7.2f}  " + " ".join(f"{w:.2f}" for w, _ in runs[k]))
    print(f"lint / parse floor: {med['lint'][0] / med['floor'][0]:.2f}x wall, {med['lint'][1] / med['floor'][1]:.2f}x cpu")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, default=Path("/work/vllm-src"), help="folder of unpacked releases (VERSION/vllm)")
    ap.add_argument("--nsysh2d", default="nsysh2d", help="the command to run (split like a shell would)")
    ap.add_argument("--sites", type=Path, default=HERE / "data" / "lint_vllm_sites.json")
    ap.add_argument("--labels", type=Path, default=HERE / "data" / "lint_vllm_labels.json")
    ap.add_argument("--release", help="release for precision and timing (default: the newest under --src)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument("--lint-args", default="", help="more arguments for `lint` (e.g. \"--select ALL\")")
    ap.add_argument("--files-only", action="store_true", help="recall: lint only the sites' files (faster; no "
                    "facts from other modules)")
    ap.add_argument("--dump-findings", type=Path, help="write the sampled findings of --release here (for labelling)")
    args = ap.parse_args()
    cmd = shlex.split(args.nsysh2d)
    LINT_ARGS[:] = shlex.split(args.lint_args)
    global FILES_ONLY
    FILES_ONLY = args.files_only
    src = args.src
    have = versions(src)
    if not have:
        sys.exit(f"lint_vllm: no VERSION/vllm folders under {src}")
    sites = json.loads(args.sites.read_text())["sites"]
    need = {s["release_before"] for s in sites} | {s["release_after"] for s in sites}
    if need - set(have):
        sys.exit(f"lint_vllm: releases missing under {src}: {sorted(need - set(have))}")
    ver = args.release or have[-1]
    head = subprocess.run(cmd + ["--version"], capture_output=True, text=True)
    first = ((head.stdout or head.stderr).strip().splitlines() or ["?"])[0][:80]
    print(f"# lint_vllm: `{shlex.join(cmd)} lint --format json {shlex.join(LINT_ARGS)}` ({first}); releases {sorted(need)}; "
          f"precision/timing on {ver}")
    rows, _ = recall(cmd, src, sites)
    print_recall(rows)
    whole, _, _ = lint(cmd, src / ver, ["vllm"])
    if args.dump_findings:
        args.dump_findings.write_text(json.dumps({"release": ver, "total": len(whole), "sample": sample(whole)}, indent=1))
        print(f"wrote {args.dump_findings}")
    precision(whole, args.labels, ver)
    if not args.no_timing:
        timing(cmd, src, ver, args.reps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
