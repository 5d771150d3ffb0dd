"""The torch.profiler (Kineto) user's path (issue 56): sites say what the trace knows (the function, where it
starts, what it called), causes carry their evidence, compare shows cost that moved. Truth is plain JSON
arithmetic over the bundled H100 traces, done here."""
import functools
import gzip
import json
import re
from collections import Counter

import pytest

from conftest import DATA

KINETO = DATA / "kineto"
TRAIN = KINETO / "train-loop-before.pt.trace.json.gz"
QWEN_BEFORE = KINETO / "qwen3vl-before.pt.trace.json.gz"
QWEN_AFTER = KINETO / "qwen3vl-after.pt.trace.json.gz"
FRAME = re.compile(r"(.+)\((\d+)\): (.+)")


@functools.lru_cache(maxsize=4)
def events(path):
    with gzip.open(path, "rt") as f:
        return tuple(e for e in json.load(f)["traceEvents"] if e.get("ph") == "X")


def copy_stacks(path):
    """For each async H2D copy call: its python_function events that enclose it on its thread, innermost first."""
    evs = events(path)
    h2d = {e["args"]["correlation"] for e in evs if e.get("cat") == "gpu_memcpy" and "HtoD" in e["name"]}
    py = [e for e in evs if e.get("cat") == "python_function"]
    out = []
    for c in evs:
        if c.get("cat") == "cuda_runtime" and c["name"] == "cudaMemcpyAsync" and c["args"]["correlation"] in h2d:
            enclosing = [p for p in py if p["tid"] == c["tid"] and p["ts"] <= c["ts"]
                         and p["ts"] + p["dur"] >= c["ts"] + c["dur"]]
            out.append(sorted(enclosing, key=lambda p: -p["ts"]))
    return out


def user_frame_and_callee(stack, user_file):
    """(function, first line, what it called) of the innermost frame in `user_file`."""
    for i, p in enumerate(stack):
        m = FRAME.fullmatch(p["name"])
        if m and m.group(1) == user_file:
            return m.group(3), int(m.group(2)), stack[i - 1]["name"] if i else None
    return None


def report(cli, *args):
    got = cli("analyze", *args, "--format", "json")
    assert got.exit_code == 0, got.output
    return json.loads(got.output)["reports"][0]


@pytest.fixture(scope="module")
def train_truth():
    return Counter(user_frame_and_callee(s, "train_loop.py") for s in copy_stacks(TRAIN))


def test_init_and_batch_copies_of_one_function_are_two_sites_named_by_function(cli, train_truth):
    """The model's `.to(dev)` at init (through Module.to) and the batch's `.to()` in the loop share the function
    main: two sites, each with the calls the trace's own stacks give it, named by function with its first line
    as def@N, never a bare file:line."""
    (fn, line, _), = {(f, n, None) for f, n, _c in train_truth}
    assert fn == "main"
    via_module = sum(n for (_f, _l, callee), n in train_truth.items() if callee.endswith(": to"))
    direct = sum(n for (_f, _l, callee), n in train_truth.items() if callee.startswith("<built-in method to "))
    assert via_module and direct and via_module + direct == sum(train_truth.values())
    rep = report(cli, TRAIN, "--top", "200", "--min-duration", "1ns")
    sites = {r["group"]: r["calls"] for r in rep["by_site"]}
    assert sites == {"workloads/train_loop.py:main > module.py:to": via_module,
                     "workloads/train_loop.py:main > to()": direct}
    lines = {t["site_line"] for t in rep["top"]}
    assert lines == {f"workloads/train_loop.py:main def@{line} > module.py:to",
                     f"workloads/train_loop.py:main def@{line} > to()"}
    assert not any(re.fullmatch(r".+\.py:\d+", s or "") for s in lines)


def test_files_named_relative_to_sys_path_resolve_under_the_source_root(cli, tmp_path, monkeypatch):
    """torch writes `qwen3vl_inputs.py`; the checkout has workloads/qwen3vl_inputs.py: the site names that path.
    From a folder where no such file is, the name stays as the trace wrote it (and --source-root finds it)."""
    names = {FRAME.fullmatch(p["name"]).group(1) for s in copy_stacks(QWEN_BEFORE) for p in s
             if FRAME.fullmatch(p["name"])}
    assert "qwen3vl_inputs.py" in names and "workloads/qwen3vl_inputs.py" not in names
    here = {r["group"].split(":")[0] for r in report(cli, QWEN_BEFORE)["by_site"]}
    assert "workloads/qwen3vl_inputs.py" in here
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NSYSH2D_SOURCE_ROOT", raising=False)
    elsewhere = {r["group"].split(":")[0] for r in report(cli, QWEN_BEFORE)["by_site"]}
    assert "qwen3vl_inputs.py" in elsewhere and "workloads/qwen3vl_inputs.py" not in elsewhere
    root = str(DATA.parent.parent)
    rooted = {r["group"].split(":")[0] for r in report(cli, QWEN_BEFORE, "--source-root", root)["by_site"]}
    assert rooted == here


def test_annotations_say_a_def_line_is_where_the_function_starts(cli, train_truth, monkeypatch):
    (_f, line, _c), *_ = train_truth
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    got = cli("gate", TRAIN)
    at = [ln for ln in got.output.splitlines() if ln.startswith("::error file=")]
    assert at and all(f"line={line}," in ln and "where it starts" in ln and "no call line" in ln for ln in at)


def alloc_truth(evs, min_us=100):
    """{cause: [(duration ns, start)]} of the long cudaHostAlloc calls by plain JSON arithmetic: host_allocation when
    a copy call was in flight (issued before the allocation ended, its GPU copy ending after it started),
    new_host_allocation when none was but the allocation came after the first copy call, else none (init)."""
    gpu = {e["args"]["correlation"]: e for e in evs if e.get("cat") == "gpu_memcpy"}
    copies = [(c["ts"], gpu[c["args"]["correlation"]]) for c in evs if c.get("cat") == "cuda_runtime"
              and "Memcpy" in c["name"] and c["args"]["correlation"] in gpu]
    first = min(ts for ts, _g in copies)
    out = {}
    for a in evs:
        if a.get("cat") == "cuda_runtime" and a["name"] == "cudaHostAlloc" and a["dur"] >= min_us:
            flight = any(ts < a["ts"] + a["dur"] and g["ts"] + g["dur"] > a["ts"] for ts, g in copies)
            cause = "host_allocation" if flight else "new_host_allocation" if a["ts"] > first else None
            out.setdefault(cause, []).append(round(a["dur"] * 1000))
    return out


def write_trace(path, evs):
    with open(path, "w") as f:
        json.dump({"traceEvents": evs, "deviceProperties": [{"name": "NVIDIA H100 80GB HBM3"}]}, f)
    return path


@pytest.mark.parametrize("ranges", [True, False])
def test_an_allocation_is_a_cause_only_with_its_evidence_and_shows_its_site(cli, tmp_path, ranges):
    """qwen3vl-after (the vision ids pinned): its init allocations (817 ms and 612 ms of cudaHostAlloc, before any
    copy) are no cause; the 3.2 ms one inside the fixed function, with nothing in flight, is new_host_allocation
    and named by its site. Without ranges (the user_annotation events taken out, as in a trace captured without
    them) the same."""
    evs = events(QWEN_AFTER)
    if not ranges:
        evs = [e for e in evs if e.get("cat") != "user_annotation"]
    truth = alloc_truth(evs)
    assert max(truth[None]) > 600_000_000   # the init ones, hundreds of ms
    rep = report(cli, write_trace(tmp_path / "t.json", evs))
    got = {r["cause"]: r for r in rep["by_cause"] if r["cause"].endswith("host_allocation")}
    assert {c: (r["calls"], r["host_ns"]) for c, r in got.items()} == \
        {c: (len(d), sum(d)) for c, d in truth.items() if c is not None}
    assert got["new_host_allocation"]["longest_site"].startswith(
        "workloads/qwen3vl_inputs.py:vision_inputs_to_device def@")


def function_truth(path, file_fn):
    """(durations ns of each call of the function, {API: (calls, ns)} inside them on their thread): plain JSON."""
    evs = events(path)
    calls = [e for e in evs if e.get("cat") == "python_function" and FRAME.fullmatch(e["name"])
             and FRAME.fullmatch(e["name"]).group(1) + ":" + FRAME.fullmatch(e["name"]).group(3) == file_fn]
    apis = {}
    for r in evs:
        if r.get("cat") in ("cuda_runtime", "cuda_driver") and any(
                r["tid"] == c["tid"] and c["ts"] <= r["ts"] and r["ts"] + r["dur"] <= c["ts"] + c["dur"] for c in calls):
            n, ns = apis.get(r["name"], (0, 0))
            apis[r["name"]] = (n + 1, ns + round(r["dur"] * 1000))
    return sorted(round(c["dur"] * 1000) for c in calls), apis


def test_compare_shows_the_cost_that_moved_into_the_fixed_function(cli):
    """qwen3vl before/after (the vision ids pinned): the fix removed the blocking copies and added cudaHostAlloc
    inside vision_inputs_to_device, which got slower: compare says so from the trace's python_function events, not
    from NVTX ranges, with the allocation named; and it has a per-cause table."""
    import statistics

    fn = "qwen3vl_inputs.py:vision_inputs_to_device"
    (db, ab), (da, aa) = function_truth(QWEN_BEFORE, fn), function_truth(QWEN_AFTER, fn)
    assert "cudaHostAlloc" not in ab and aa["cudaHostAlloc"][0] > 0
    assert statistics.median(da) > statistics.median(db)
    got = cli("compare", QWEN_BEFORE, QWEN_AFTER, "--format", "json")
    assert got.exit_code == 0, got.output
    doc = json.loads(got.output)["compare"]
    row = next(r for r in doc["functions"] if r["name"] == "workloads/" + fn)
    assert (row["count_before"], row["count_after"]) == (len(db), len(da))
    assert (row["median_ns_before"], row["median_ns_after"]) == (statistics.median(db), statistics.median(da))
    assert (row["total_ns_before"], row["total_ns_after"]) == (sum(db), sum(da))
    alloc = next(g for g in row["grew"] if g["api"] == "cudaHostAlloc")
    assert (alloc["calls_before"], alloc["calls_after"], alloc["total_ns_after"]) == (0, *aa["cudaHostAlloc"])
    assert "cudaHostAlloc" in row["new_apis"]
    (finding,) = doc["function_findings"]
    assert finding["name"] == "workloads/" + fn and finding["new"] == ["cudaHostAlloc"]
    # per cause, as the three-trace view has it: from each side's analyze
    for side, path in (("before", QWEN_BEFORE), ("after", QWEN_AFTER)):
        causes = {r["cause"]: r["calls"] for r in report(cli, path)["by_cause"]}
        assert {r["cause"]: r[f"calls_{side}"] for r in doc["by_cause"] if r[f"calls_{side}"]} == causes
    text = cli("compare", QWEN_BEFORE, QWEN_AFTER).output
    assert "long calls by cause" in text and "host time per Python function" in text
    assert "slower with cudaHostAlloc appearing: workloads/qwen3vl_inputs.py:vision_inputs_to_device" in \
        " ".join(text.split())


@pytest.fixture(scope="module")
def no_ranges(tmp_path_factory):
    """train-loop-before without its record_function ranges: a trace as a plain `with profile():` capture gives
    it (no steps), with the model's init copies before the loop."""
    evs = [e for e in events(TRAIN) if e.get("cat") != "user_annotation"]
    return evs, write_trace(tmp_path_factory.mktemp("noranges") / "t.json", evs)


def test_steady_after_leaves_out_what_came_before_and_says_so(cli, no_ranges):
    evs, path = no_ranges
    h2d = {e["args"]["correlation"] for e in evs if e.get("cat") == "gpu_memcpy" and "HtoD" in e["name"]}
    calls = [e["ts"] for e in evs if e.get("cat") == "cuda_runtime" and e["name"] == "cudaMemcpyAsync"
             and e["args"]["correlation"] in h2d]
    first_conv = min(e["ts"] for e in evs if e.get("cat") == "cpu_op" and e["name"] == "aten::convolution")
    first_api = min(e["ts"] for e in evs if e.get("cat") in ("cuda_runtime", "cuda_driver"))
    for spec, start in (("op:aten::convolution", first_conv), ("3s", first_api + 3e6)):
        before = sum(ts < start for ts in calls)
        assert 0 < before < len(calls)
        rep = report(cli, path, "--steady-after", spec)
        assert rep["totals"]["calls"] == len(calls) - before
        assert f"{before} copy calls before it left out" in rep["steps"]["steady"]
        assert rep["steps"]["steady"] in rep["warnings"]
    rep = report(cli, path, "--steady-after", "range:nope")
    assert rep["totals"]["calls"] == len(calls) and "does not apply" in rep["steps"]["steady"]
    got = cli("gate", path, "--steady-after", "op:aten::convolution", "--max-long-calls", "1000")
    assert got.exit_code == 0 and "steady state from op:aten::convolution" in got.output
    bad = cli("analyze", path, "--steady-after", "soon")
    assert bad.exit_code == 2 and "bad --steady-after 'soon'" in bad.output


def test_options_that_cannot_apply_say_so_in_plain_words(cli, no_ranges):
    _evs, path = no_ranges
    got = cli("gate", path, "--warmup-steps", "1", "--max-blocked-per-step", "1ms")
    assert got.exit_code == 1
    text = " ".join(got.output.split())
    assert "--warmup-steps 1 does not apply: the trace has no step ranges" in text
    assert "[FAIL] max-blocked-per-step: cannot compute a per-step figure: the trace has no step ranges" in text
    assert "matches the step pattern ^step\\b;" in text and "'^step\\\\b'" not in text


def test_a_new_option_reads_the_cached_tables_not_the_json(cli, monkeypatch, tmp_path):
    """The first command keeps the trace's normalized tables in the cache; a second one with an option not used
    before (no cached report) reads them, not the JSON, and reports the same as a fresh read. A table file edited
    in the cache (its seal no longer matches) is not served: the trace is read again."""
    from nsysh2d.source import kineto_cache, kineto_json

    monkeypatch.setenv("NSYSH2D_CACHE_DIR", str(tmp_path / "cache"))
    fresh = report(cli, QWEN_BEFORE, "--min-duration", "250us", "--no-cache")
    report(cli, QWEN_BEFORE)
    folder = kineto_cache.folder(str(QWEN_BEFORE))
    assert (folder / "manifest.json").is_file()
    real_read = kineto_json.read
    reads = []
    monkeypatch.setattr(kineto_json, "read", lambda *a, **k: reads.append(a) or real_read(*a, **k))
    again = report(cli, QWEN_BEFORE, "--min-duration", "250us")
    assert reads == [] and again == fresh
    runtime = folder / "k_runtime.parquet"
    runtime.write_bytes(runtime.read_bytes())   # same bytes, a new mtime: no longer the file the cache sealed
    assert report(cli, QWEN_BEFORE, "--min-duration", "260us") == report(cli, QWEN_BEFORE, "--min-duration", "260us",
                                                                           "--no-cache")
    assert len(reads) == 2


def test_a_slow_read_shows_progress_whatever_the_size(cli, monkeypatch):
    from nsysh2d.source import progress

    monkeypatch.setattr(progress, "PROGRESS_AFTER", 0.0)   # as if the read took longer than 2 s
    monkeypatch.setattr(progress, "_tty", lambda: True)     # on a terminal (a pipe or CI log gets no progress)
    monkeypatch.delenv("NSYSH2D_QUIET", raising=False)
    got = cli("analyze", QWEN_BEFORE, "--no-cache")
    assert got.exit_code == 0 and "nsysh2d: reading qwen3vl-before.pt.trace.json.gz: 100%" in got.output


def test_check_reports_what_it_saw_when_the_script_raises(tmp_path):
    """A script that raises under `nsysh2d check` (e.g. `.to("cuda")` on a CPU-only torch) is the script's failure:
    the report of the copies seen before it, the script's own traceback, exit 4 (the workload failed), never 70."""
    pytest.importorskip("torch")
    from conftest import run_cli

    script = tmp_path / "crash.py"
    script.write_text("import torch\n\n\ndef load():\n    buf = torch.zeros(3, 64)\n"
                      "    torch.empty(3, 64, device='meta').copy_(buf, non_blocking=True)\n"
                      "    raise ValueError('no GPU here')\n\n\nload()\n")
    r = run_cli("check", "--device", "meta", "--format", "json", script)
    assert r.returncode == 4, r.stderr
    seen = json.loads(r.stdout)["runtime_check"]
    assert [(c["site_line"], c["source_class"]) for c in seen["copies"]] == [(f"{tmp_path.name}/crash.py:6", "pageable")]
    assert r.stderr.startswith("Traceback (most recent call last):")
    assert f'File "{script}", line 7, in load' in r.stderr and "ValueError: no GPU here" in r.stderr
    assert "runpy" not in r.stderr and "nsysh2d/checker/runtime.py" not in r.stderr and "internal error" not in r.stderr
    assert r.stderr.rstrip().splitlines()[-1] == f"nsysh2d: error: {script} raised ValueError (its traceback above); " \
                                                 "the report shows the copies seen before it"


def test_paper_cuts(cli, tmp_path, no_ranges, monkeypatch):
    """Issue 56.7: sites cut in the middle at 100 columns stay apart; each fix said once per rule in annotations
    and JUnit; the cut offender list says so; gate -o; -q after the command; figures in words; plurals."""
    from nsysh2d.present.ci import offender_line

    got = cli("compare", QWEN_BEFORE, QWEN_AFTER, env={"COLUMNS": "100"})
    body = got.output.split("by call site")[1].split("─\n")[1].split("\n\n")[0]
    cells = [ln.strip().split("  ")[0] for ln in body.splitlines() if ln.strip()]
    assert len(cells) == 4 and len(set(cells)) == 4 and any("…" in c for c in cells), cells
    _evs, path = no_ranges
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    out = tmp_path / "verdict.txt"
    got = cli("gate", path, "-q", "-o", out, "--junit", tmp_path / "g.xml")
    assert got.exit_code == 1 and out.read_text().startswith("FAIL")
    fix = "pin the source: `.pin_memory()` before"
    rule_line = next(ln for ln in got.output.splitlines() if ln.startswith("::error title=nsysh2d gate max-long-calls"))
    assert rule_line.count(fix) == 1 and "10 of 49 offending copies shown, the longest" in rule_line
    assert (tmp_path / "g.xml").read_text().count(fix) == 1
    assert "10 of 49 offending copies shown, the longest" in out.read_text()
    assert offender_line({"site": "a.py:f", "long_ns": 15167451}) == "site a.py:f, long 15.17 ms"
    from nsysh2d.units import plural
    assert (plural(1, "long sync copy call"), plural(2, "source class")) == ("1 long sync copy call", "2 source classes")


def test_steady_loop_workload_runs_on_cpu(tmp_path):
    """workloads/steady_loop.py (the capture issue 56 asks for on the GPU host: init copies, no step ranges, a fix
    that allocates pinned memory) runs on a CPU-only torch with --tiny and writes its host timers."""
    pytest.importorskip("torch")
    import subprocess
    import sys

    from conftest import ROOT

    for variant in ("before", "after"):
        out = tmp_path / f"{variant}.json"
        r = subprocess.run([sys.executable, str(ROOT / "workloads" / "steady_loop.py"), "--device", "cpu", "--tiny",
                            "--variant", variant, "--json", str(out)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        got = json.loads(out.read_text())
        assert got["variant"] == variant and len(got["inputs_to_device_ms"]) == got["steps"] == 6
