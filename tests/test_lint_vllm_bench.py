"""benchmarks/lint_vllm.py on a two-release toy tree with a stand-in linter: the recall and precision it prints are
the ones counted here by hand from the toy's sites, findings and labels (timings are printed, never asserted)."""
import json
import subprocess
import sys
import textwrap

from conftest import ROOT

# Stand-in for `nsysh2d lint --format json PATH...`: every line holding the marker BAD is a `pageable` finding,
# every line holding STRIDED a `pinned_strided` one, reported with paths relative to the working directory.
FAKE = textwrap.dedent("""\
    import json, os, sys
    if sys.argv[1] == "--version":
        print("stand-in 0"); sys.exit(0)
    out = []
    for p in sys.argv[4:]:
        files = [p] if p.endswith(".py") else sorted(os.path.join(d, f) for d, _, fs in os.walk(p) for f in fs)
        for f in files:
            for i, line in enumerate(open(f), 1):
                for mark, rule in (("BAD", "pageable"), ("STRIDED", "pinned_strided")):
                    if mark in line:
                        out.append({"path": f, "line": i, "rule": rule, "message": "m"})
    print(json.dumps({"findings": out})); sys.exit(1 if out else 0)
""")

BEFORE = textwrap.dedent("""\
    def copy_ids(a):
        x = 1
        return torch.from_numpy(a).to("cuda", non_blocking=True)  # BAD

    def copy_rows(buf, n):
        return out.copy_(buf[:, :n], non_blocking=True)  # missed by the stand-in

    def other(a):
        return a.to("cuda", non_blocking=True)  # BAD

    def long_fn(a, b):
        y = 0
        y = 0
        x = a.to("cuda", non_blocking=True)  # BAD
        y = 1
        y = 2
        y = 3
        y = 4
        return b.to("cuda", non_blocking=True)  # BAD
""")
AFTER = textwrap.dedent("""\
    def copy_ids(a):
        x = 1
        return async_tensor_h2d(a, "cuda")

    def copy_rows(buf, n):
        return out.copy_(buf[:, :n], non_blocking=True)  # STRIDED still here

    def other(a):
        return a.to("cuda", non_blocking=True)  # BAD

    def long_fn(a, b):
        y = 0
        y = 0
        x = async_tensor_h2d(a, "cuda")
        y = 1
        y = 2
        y = 3
        y = 4
        return b.to("cuda", non_blocking=True)  # BAD still here, 5 lines below the fixed copy
""")


def site(fn, span_b, line_b, span_a, line_a, cls):
    return {"pr": "1", "title": "t", "tier": "pr", "release_before": "1.0", "release_after": "1.1",
            "file": "vllm/m.py", "function": fn, "function_span_before": span_b, "line_before": line_b,
            "function_span_after": span_a, "line_after_if_any": line_a, "expected_class": cls}


def test_recall_precision_from_toy_tree(tmp_path):
    src = tmp_path / "src"
    for ver, text in (("1.0", BEFORE), ("1.1", AFTER)):
        (src / ver / "vllm").mkdir(parents=True)
        (src / ver / "vllm" / "m.py").write_text(text)
    fake = tmp_path / "fake.py"
    fake.write_text(FAKE)
    # copy_ids: flagged in 1.0 (line 3), gone in 1.1 -> counts; copy_rows: not flagged in 1.0 -> does not count;
    # long_fn: flagged, and clean at the fixed copy (line 14) though the function keeps another BAD (line 19):
    # counts, but not in the stricter whole-function count
    sites = [site("copy_ids", [1, 3], 3, [1, 3], 3, "pageable"), site("copy_rows", [5, 6], 6, [5, 6], 6, "pinned_strided"),
             site("long_fn", [11, 19], 14, [11, 19], 14, "pageable")]
    (tmp_path / "sites.json").write_text(json.dumps({"sites": sites}))
    # findings on the newest release (1.1): line 6 pinned_strided, line 9 pageable; one labelled each way is 1/2,
    # and a label for a finding that no longer exists is ignored; then one label removed -> one unlabelled
    labels = [{"file": "vllm/m.py", "line": 6, "rule": "pinned_strided", "label": "TRUE", "reason": "r"},
              {"file": "vllm/m.py", "line": 9, "rule": "pageable", "label": "FALSE", "reason": "r"},
              {"file": "vllm/m.py", "line": 3, "rule": "pageable", "label": "TRUE", "reason": "gone"}]
    (tmp_path / "labels.json").write_text(json.dumps({"release": "1.1", "linter_commit": "abc", "labels": labels}))
    cmd = [sys.executable, str(ROOT / "benchmarks" / "lint_vllm.py"), "--src", str(src), "--nsysh2d",
           f"{sys.executable} {fake}", "--sites", str(tmp_path / "sites.json"), "--labels", str(tmp_path / "labels.json"),
           "--reps", "1", "--dump-findings", str(tmp_path / "dump.json")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ("recall (all sites): 2/3 = 67% (flagged before 2, clean after 2; with no finding of the class anywhere "
            "in the function after: 1/3)") in r.stdout, r.stdout
    assert "precision on 1.1: 3 findings, 3 in the labelled sample" in r.stdout
    assert "precision (sample): 1/2 = 50%" in r.stdout and "unlabelled: 1 finding(s)" in r.stdout
    assert "vllm/m.py:19 pageable" in r.stdout
    assert "lint / parse floor:" in r.stdout and "x cpu" in r.stdout
    dump = json.loads((tmp_path / "dump.json").read_text())
    assert [(f["line"], f["rule"]) for f in dump["sample"]] == [(6, "pinned_strided"), (9, "pageable"), (19, "pageable")]

    (tmp_path / "labels.json").write_text(json.dumps({"labels": labels[:1]}))
    r = subprocess.run(cmd + ["--no-timing"], capture_output=True, text=True, timeout=120)
    assert "precision (sample): 1/1 = 100%" in r.stdout and "unlabelled: 2 finding(s)" in r.stdout, r.stdout
    assert "vllm/m.py:9 pageable" in r.stdout
