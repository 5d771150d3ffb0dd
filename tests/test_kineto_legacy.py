"""Kineto traces of torch 1.8-1.9 (2021): other category names, thread ids as strings, and each op's Python stack in
its `Call stack` argument. The file is one of the samples the TensorBoard profiler plugin shipped (pytorch/kineto,
tests/data/thirdparty/README.md): ResNet-50 on a V100 with images copied from pageable memory. Truth is plain JSON
arithmetic here."""
import json
import re

from conftest import THIRDPARTY, run_cli
from test_kineto import events

RESNET = THIRDPARTY / "kineto-tb-plugin__resnet50_num_workers_0__worker0.1623143566756.pt.trace.json.gz"
FRAME = re.compile(r"(.+)\((\d+)\): (.+)")


def report(cli, *args):
    return json.loads(cli("analyze", RESNET, "--format", "json", "--no-cache", *args).output)["reports"][0]


def copy_calls():
    """(event, bytes) of each cudaMemcpyAsync whose copy is host to device, joined on correlation id."""
    evs = events(RESNET)
    copies = {e["args"]["correlation"]: e for e in evs if e.get("cat") == "Memcpy" and "HtoD" in e["name"]}
    return [(e, copies[e["args"]["correlation"]]["args"]["bytes"]) for e in evs
            if e.get("cat") == "Runtime" and e["name"] == "cudaMemcpyAsync" and e["args"]["correlation"] in copies]


def test_the_file_is_of_the_old_layout():
    evs = events(RESNET)
    cats = {e.get("cat") for e in evs}
    assert {"Runtime", "Memcpy", "Kernel", "Operator"} <= cats and not cats & {"cuda_runtime", "gpu_memcpy", "cpu_op"}
    assert all(isinstance(e["tid"], str) for e in evs if e.get("cat") == "Runtime")


def test_calls_bytes_and_long_calls_equal_json_arithmetic(cli):
    calls = copy_calls()
    t = report(cli)["totals"]
    assert (t["calls"], t["bytes"]) == (len(calls), sum(b for _e, b in calls)) == (12, 115607040)
    long = [e["dur"] * 1000 for e, _b in calls if e["dur"] * 1000 >= 100_000]
    assert (t["long_calls"], t["long_ns"]) == (len(long), sum(long)) and len(long) == 6
    assert t["activity_without_call"] == t["calls_without_activity"] == 0


def test_profiler_steps_are_read_from_operator_events(cli):
    """record_function ranges are `Operator` events without recorded shapes: ProfilerStep#N are the steps."""
    steps = [e for e in events(RESNET) if e.get("cat") == "Operator" and e["name"].startswith("ProfilerStep#")]
    got = report(cli)["steps"]
    assert (got["pattern"], got["steps"]) == (r"^ProfilerStep#\d+$", len(steps)) and len(steps) == 6
    assert got["step_ns"] == sum(e["dur"] * 1000 for e in steps)


def test_call_sites_come_from_the_ops_call_stacks(cli):
    """Each long call's site is the innermost frame of the user's script in the `Call stack` of the innermost op
    around the call (aten::copy_), and its NVTX path the step it ran in."""
    evs = events(RESNET)
    ops = [e for e in evs if e.get("cat") == "Operator" and "Call stack" in e["args"]]
    steps = [e for e in ops if e["name"].startswith("ProfilerStep#")]
    want = {}
    for call, _b in copy_calls():
        if call["dur"] * 1000 < 100_000:
            continue
        around = [o for o in ops if o["tid"] == call["tid"] and o["ts"] <= call["ts"]
                  and call["ts"] + call["dur"] <= o["ts"] + o["dur"] and "::" in o["name"]]
        inner = max(around, key=lambda o: o["ts"])
        file, line, _fn = FRAME.fullmatch(inner["args"]["Call stack"].split(";")[0]).groups()
        step = next(s["name"] for s in steps if s["ts"] <= call["ts"] <= s["ts"] + s["dur"])
        want[call["ts"] * 1000] = (f"{file}:{line}", step)
    top = report(cli)["top"]
    assert len(top) == len(want) == 6
    assert {r["api_start_ns"]: (r["site_line"], r["nvtx_path"]) for r in top} == want
    assert all(r["source_class"] == "pageable" for r in top)


def test_api_summary_counts_every_runtime_event(cli):
    want = {}
    for e in events(RESNET):
        if e.get("cat") == "Runtime":
            want.setdefault(e["name"], []).append(e["dur"] * 1000)
    rows = json.loads(cli("api-summary", RESNET, "--format", "json", "--no-cache").output)["api_summary"][0]["rows"]
    assert {r["name"]: (r["calls"], r["total_ns"]) for r in rows} == {n: (len(d), sum(d)) for n, d in want.items()}


def test_gate_judges_it():
    r = run_cli("gate", RESNET, "--no-cache")
    assert r.returncode == 1 and "resnet50_profiler_api.py:44" in r.stdout, r.stdout + r.stderr


def test_categories_threads_and_frames_unit():
    from nsysh2d.source import kineto_legacy as kl

    assert kl.category("Runtime", "cudaMemcpyAsync", {}) == "cuda_runtime"
    assert kl.category("Runtime", "cuLaunchKernel", {}) == "cuda_driver"
    assert kl.category("Operator", "aten::copy_", {}) == "cpu_op"
    assert kl.category("Operator", "CudnnConvolutionBackward", {}) == "cpu_op"
    assert kl.category("Operator", "my_range", {"Call stack": "x.py(1): f"}) == "user_annotation"
    assert kl.category("Operator", "detach_", {"Input Dims": [[]]}) == "cpu_op"
    assert (kl.thread_id("25738"), kl.thread_id("stream 7"), kl.thread_id("٣")) == (25738, "stream 7", "٣")
    # An op, a nested op with the same stack, then a sibling line: one chain of parents per call site.
    st = kl.Stacks()
    st.add(1, 0, 100, "a.py(5): f;main.py(9): <module>")
    st.add(1, 10, 50, "a.py(5): f;main.py(9): <module>")
    st.add(1, 60, 90, "a.py(6): f;main.py(9): <module>")
    st.add(1, 200, 300, "b.py(7): g")     # no copy call inside: no frames
    st.add(2, 0, 100, "c.py(8): h")       # another thread's op: no call on that thread
    names, got = {}, []
    st.frames(lambda n: names.setdefault(n, len(names)), lambda *f: got.append(f), [(1, 20), (1, 70), (3, 0)])
    by_id = {f[3]: f for f in got}
    text = {v: k for k, v in names.items()}
    assert [(text[f[5]], f[1], f[2], text[by_id[f[4]][5]] if f[4] >= 0 else None) for f in got] == [
        ("main.py(9): <module>", 0, 100, None), ("a.py(5): f", 0, 100, "main.py(9): <module>"),
        ("a.py(6): f", 60, 90, "main.py(9): <module>")]


def test_a_deep_stack_keeps_its_innermost_frames():
    from nsysh2d.source import kineto_legacy as kl

    st = kl.Stacks()
    st.add(1, 0, 100, ";".join(f"f.py({i}): f{i}" for i in range(100)))   # innermost first
    names, got = {}, []
    st.frames(lambda n: names.setdefault(n, len(names)), lambda *f: got.append(f), [(1, 50)])
    text = {v: k for k, v in names.items()}
    assert len(got) == kl.MAX_DEPTH and text[got[-1][5]] == "f.py(0): f0" and text[got[0][5]] == "f.py(63): f63"


def test_the_file_is_not_modified(cli):
    before = RESNET.read_bytes()
    cli("analyze", RESNET, "--no-cache")
    assert RESNET.read_bytes() == before
