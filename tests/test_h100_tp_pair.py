"""workloads/tp_pair.py on one H100 (world 1) with inputs above the pageable staging size (`--input-tokens 131072`:
3 MiB of M-RoPE positions per step), traced by torch.profiler (tests/data/h100/README.md, tp1/). It shows the
workload reproduces what it is for before a two-GPU host is lent: before's strided copy waits for the step queued
ahead of it, after's does not. Truth is plain JSON arithmetic and the workload's own host timer."""
import json

import pytest

from conftest import DATA, run_cli
from test_kineto import events

TP1 = DATA / "h100" / "tp1"
TRACE = {v: TP1 / f"tp-{v}-rank0.pt.trace.json.gz" for v in ("before", "after")}


def timer(run, v):
    return json.loads((TP1 / f"tp-{run}-{v}-rank0.json").read_text())


def in_step_copies(v):
    """[(step name, [(duration ns, bytes) of its H2D copy calls])], steps in time order."""
    evs = events(TRACE[v])
    steps = sorted((e for e in evs if e.get("cat") == "user_annotation" and e["name"].startswith("step ")),
                   key=lambda e: e["ts"])
    copies = {e["args"]["correlation"]: e for e in evs if e.get("cat") == "gpu_memcpy" and "HtoD" in e["name"]}
    calls = [e for e in evs if e.get("cat") == "cuda_runtime" and e["name"] == "cudaMemcpyAsync"
             and e["args"]["correlation"] in copies]
    return [(s["name"], [(round(c["dur"] * 1000), copies[c["args"]["correlation"]]["args"]["bytes"]) for c in calls
                         if s["ts"] <= c["ts"] and c["ts"] + c["dur"] <= s["ts"] + s["dur"]]) for s in steps]


def report(cli, v):
    return json.loads(cli("analyze", TRACE[v], "--format", "json", "--no-cache").output)["reports"][0]


def test_every_run_of_a_variant_computed_the_same():
    """Host timer alone, under nsys and under torch.profiler: one checksum for all six runs (the fix changes no value)."""
    sums = {timer(run, v)["checksum"] for run in ("host", "nsys", "kineto") for v in ("before", "after")}
    assert len(sums) == 1


def test_before_waits_once_a_step_for_the_queue(cli):
    """Each step after the first has one long copy call, of the 3 MiB M-RoPE positions, lasting less than the host
    timer around that copy in the same run; the report finds them at copy_to_device, pinned_strided, waiting on
    the backlog, with the blocked time JSON arithmetic gives."""
    steps = in_step_copies("before")
    long = [[(d, b) for d, b in calls if d >= 100_000] for _n, calls in steps]
    assert len(steps) == 10 and all(len(x) == 1 and x[0][1] == 3 * 2 ** 20 for x in long[1:])
    mrope_us = timer("kineto", "before")["mrope_us"]
    assert all(x[0][0] <= us * 1000 for x, us in zip(long[1:], mrope_us[1:]))
    assert sum(x[0][0] for x in long[1:]) >= 0.7 * sum(mrope_us[1:]) * 1000   # most of the timed span is the wait
    got = report(cli, "before")
    in_steps = [d for x in long for d, _b in x]
    assert got["totals"]["long_calls"] - got["totals"]["outside_steps_long_calls"] == len(in_steps)
    assert got["totals"]["blocking_ns_per_step"] == pytest.approx(sum(in_steps) / 10)
    top = [r for r in got["top"] if r["nvtx_path"] and r["nvtx_path"].startswith("step ")]
    assert top and all((r["site"], r["source_class"], r["cause"]) ==
                       ("workloads/qwen3vl_inputs.py:copy_to_device > copy_()", "pinned_strided", "backlog") for r in top)


def test_after_never_waits_inside_a_step(cli):
    assert all(d < 100_000 for _n, calls in in_step_copies("after") for d, _b in calls)
    t = report(cli, "after")["totals"]
    assert t["long_calls"] == t["outside_steps_long_calls"] and t["blocking_ns_per_step"] == 0
    assert timer("kineto", "after")["copy_us_per_step"] < timer("kineto", "before")["copy_us_per_step"] / 10


def test_gate_fails_before_and_passes_after():
    assert run_cli("gate", TRACE["before"], "--no-cache").returncode == 1
    assert run_cli("gate", TRACE["after"], "--no-cache").returncode == 0
