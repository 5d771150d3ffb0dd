"""Kineto traces made elsewhere (HTA's public test traces, tests/data/thirdparty/README.md): what a PyTorch user
brings. Older torch.profiler versions wrote negative thread ids, schedules mark steps with ProfilerStep#N, and
the first GPU copies can belong to calls made before recording began. Truth is plain JSON arithmetic here."""
import gzip
import json
import statistics

import pytest

from conftest import THIRDPARTY, run_cli
from test_kineto import events, h2d_calls

QUEUE = THIRDPARTY / "hta__negative_queue_length_values_check__rank0.json.gz"   # A100, 2023, rank 0 of 16
ALEXNET = THIRDPARTY / "hta__critical_path__alexnet__trace.json.gz"               # A100, pageable copies of weights
ROCM = THIRDPARTY / "hta__amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"   # MI250, HIP


def report(cli, path, *args):
    return json.loads(cli("analyze", path, "--format", "json", "--no-cache", *args).output)["reports"][0]


def api_events(path):
    return [e for e in events(path) if e.get("cat") in ("cuda_runtime", "cuda_driver")]


def test_negative_thread_ids_keep_their_events(cli):
    """A 2023 trace writes some threads' ids as negative numbers (a pthread id cut to 32 bits). Those events were
    left out with a warning (309 cudaEventQuery calls); every call is read now, per function."""
    evs = api_events(QUEUE)
    assert any(e["tid"] < 0 for e in evs)
    rows = json.loads(cli("api-summary", QUEUE, "--format", "json", "--no-cache").output)["api_summary"][0]["rows"]
    want = {}
    for e in evs:
        want.setdefault(e["name"], []).append(round(e["dur"] * 1000))
    assert {r["name"]: (r["calls"], r["total_ns"]) for r in rows} == {n: (len(d), sum(d)) for n, d in want.items()}
    got = report(cli, QUEUE)
    assert not any("left out" in w for w in got["warnings"]), got["warnings"]


def test_copies_issued_before_recording_are_not_orphans(cli):
    """The trace starts while copies issued earlier still run: their correlation ids are below every recorded
    call's. They are counted apart, not as copies no call claims, so the gate can pass the trace."""
    evs = events(QUEUE)
    first = min(e["args"]["correlation"] for e in api_events(QUEUE))
    calls = {e["args"]["correlation"] for e in api_events(QUEUE)}
    early = [e for e in evs if e.get("cat") == "gpu_memcpy" and e["args"]["correlation"] < first]
    unclaimed = [e for e in evs if e.get("cat") == "gpu_memcpy" and e["args"]["correlation"] not in calls]
    assert len(early) == len(unclaimed) > 0
    got = report(cli, QUEUE)
    assert got["totals"]["activity_before_capture"] == len(early)
    assert got["totals"]["activity_without_call"] == 0
    assert any(f"{len(early)} memcpy activity rows issued before the capture began" in w for w in got["warnings"])
    r = run_cli("gate", QUEUE, "--no-cache")
    assert r.returncode == 0, r.stdout + r.stderr


def test_calls_made_after_recording_began_still_cannot_be_judged(cli, tmp_path):
    """The same trace with one recorded H2D copy call taken out: its copy's id is above the first call's, so it
    is a copy no call claims, and the gate fails (it cannot judge that copy)."""
    doc = json.loads(gzip.open(QUEUE, "rt").read())
    htod = {e["args"]["correlation"] for e in doc["traceEvents"] if e.get("cat") == "gpu_memcpy" and "HtoD" in e["name"]}
    victim = next(e for e in doc["traceEvents"] if e.get("cat") == "cuda_runtime" and e["args"].get("correlation") in htod)
    doc["traceEvents"].remove(victim)
    path = tmp_path / "one-call-less.json"
    path.write_text(json.dumps(doc))
    got = report(cli, path)
    assert got["totals"]["activity_without_call"] == 1
    r = run_cli("gate", path, "--no-cache")
    assert r.returncode == 1 and "1 copies that no copy API call claims (their call is not in the trace" in r.stdout, r.stdout


def test_profiler_steps_are_the_steps_when_nothing_else_is(cli):
    """torch.profiler's schedule marks each step ProfilerStep#N: with no range named "step ...", those are the
    steps (count, wall time and per-step figures), and the report says which pattern it used."""
    steps = [e for e in events(QUEUE) if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")]
    got = report(cli, QUEUE)
    assert got["steps"]["pattern"] == r"^ProfilerStep#\d+$"
    assert got["steps"]["steps"] == len(steps) == 5
    assert got["steps"]["step_ns"] == sum(round(e["dur"] * 1000) for e in steps)
    calls = h2d_calls(QUEUE)
    inside = [c for c in calls if any(s["ts"] * 1000 <= c[0] and c[0] + c[1] <= (s["ts"] + s["dur"]) * 1000
                                      for s in steps)]
    assert sum(r["calls"] for r in got["by_step"] if r["step"] is not None) == len(inside) > 0
    assert got["totals"]["outside_steps_calls"] == len(calls) - len(inside)
    # compare's range wall times take the same steps
    rt = json.loads(cli("compare", QUEUE, QUEUE, "--format", "json", "--no-cache").output)["compare"]
    step_rows = [r for r in rt["ranges"] if r["is_step"]]
    assert len(step_rows) == 1 and step_rows[0]["count_before"] == 5
    assert step_rows[0]["median_ns_before"] == statistics.median(round(e["dur"] * 1000) for e in steps)


def test_named_steps_win_over_profiler_steps(cli, tmp_path):
    """A trace with both kinds: the "step" ranges are the steps, never both (each step would count twice); an
    explicit --step-pattern is taken as given."""
    doc = json.loads(gzip.open(QUEUE, "rt").read())
    prof = [e for e in doc["traceEvents"] if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")]
    doc["traceEvents"] += [dict(e, name=f"step {i}") for i, e in enumerate(prof[:3])]
    path = tmp_path / "both.json"
    path.write_text(json.dumps(doc))
    got = report(cli, path)
    assert (got["steps"]["pattern"], got["steps"]["steps"]) == (r"^step\b", 3)
    got = report(cli, path, "--step-pattern", "^ProfilerStep")
    assert got["steps"]["steps"] == 5


def test_figures_and_fix_of_a_third_party_trace(cli):
    """AlexNet's weights copied from pageable memory: calls, bytes and long calls equal JSON arithmetic, and the
    fix says how to get a Python call site in this format (torch.profiler's with_stack), not nsys's."""
    got = report(cli, ALEXNET)
    calls = h2d_calls(ALEXNET)
    t = got["totals"]
    assert (t["calls"], t["bytes"]) == (len(calls), sum(b for _s, _d, b, _t in calls))
    long = [d for _s, d, _b, _t in calls if d >= 100_000]
    assert (t["long_calls"], t["long_ns"]) == (len(long), sum(long)) and len(long) == 7
    fixes = {r["fix"] for r in got["top"]}
    assert fixes and all("with_stack=True" in f and "--python-backtrace" not in f for f in fixes), fixes


def test_a_rocm_trace_is_refused_in_one_line(tmp_path):
    """HIP calls land in the cuda_runtime category of a ROCm trace: it is named for what it is (exit 2), and a gate
    cannot pass it."""
    for cmd in ("analyze", "gate"):
        r = run_cli(cmd, ROCM, "--no-cache")
        assert r.returncode == 2 and "ROCm (HIP) trace" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("path", [QUEUE, ALEXNET], ids=lambda p: p.name)
def test_the_files_are_not_modified(path, cli):
    before = path.read_bytes()
    cli("analyze", path, "--no-cache")
    assert path.read_bytes() == before


@pytest.mark.parametrize("cat", ["mtia_runtime", "xpu_runtime"])
def test_another_accelerators_trace_is_named_in_one_line(tmp_path, cat):
    """HTA's MTIA traces hold `mtia_runtime` calls and no CUDA ones: made here from the AlexNet trace by renaming
    its API categories. One line that names the category, exit 2; with no API calls at all, the old hint."""
    doc = json.loads(gzip.open(ALEXNET, "rt").read())
    for e in doc["traceEvents"]:
        if e.get("cat") in ("cuda_runtime", "cuda_driver"):
            e["cat"] = cat
    path = tmp_path / "other.json"
    path.write_text(json.dumps(doc))
    r = run_cli("analyze", path, "--no-cache")
    assert r.returncode == 2 and f"its API calls are '{cat}' events" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") != cat]
    path.write_text(json.dumps(doc))
    r = run_cli("analyze", path, "--no-cache")
    assert r.returncode == 2 and "without ProfilerActivity.CUDA" in r.stderr, r.stderr
