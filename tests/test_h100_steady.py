"""Issue 56's "Done when" on the Kineto traces captured on an H100 (tests/data/h100/steady/README.md): a loop with
init copies and a fix that adds a pinned allocation, no step ranges, captured with the copy hook. Truth is plain JSON
arithmetic over each trace file and the workload's own host timers (steady-loop-*.json), never nsysh2d's output."""
import functools
import gzip
import json
import re
import statistics
from collections import Counter

import pytest

from conftest import DATA, ROOT

STEADY = DATA / "h100" / "steady"
TRACE = {v: STEADY / f"steady-loop-{v}.pt.trace.json.gz" for v in ("before", "after")}
TIMER = {v: json.loads((STEADY / f"steady-loop-{v}.json").read_text()) for v in ("before", "after")}
WORKLOAD = ROOT / "workloads" / "steady_loop.py"
FRAME = re.compile(r"(.+)\((\d+)\): (.+)")


def line_of(text):
    """The 1-based line of workloads/steady_loop.py holding `text` (exactly one)."""
    (n,) = [i for i, ln in enumerate(WORKLOAD.read_text().splitlines(), 1) if text in ln]
    return f"workloads/steady_loop.py:{n}"


@functools.lru_cache(maxsize=2)
def events(variant):
    with gzip.open(TRACE[variant], "rt") as f:
        return tuple(e for e in json.load(f)["traceEvents"] if e.get("ph") == "X")


def inside(e, outer):
    return e["tid"] == outer["tid"] and outer["ts"] <= e["ts"] and e["ts"] + e["dur"] <= outer["ts"] + outer["dur"]


def h2d_calls(variant):
    """The cudaMemcpyAsync calls whose GPU copy is host-to-device, by start."""
    evs = events(variant)
    h2d = {e["args"]["correlation"] for e in evs if e.get("cat") == "gpu_memcpy" and "HtoD" in e["name"]}
    return sorted((e for e in evs if e.get("cat") == "cuda_runtime" and "Memcpy" in e["name"]
                   and e["args"]["correlation"] in h2d), key=lambda e: e["ts"])


def hooks(variant):
    return [e for e in events(variant) if e.get("cat") == "user_annotation" and e["name"].startswith("nsysh2d.h2d ")]


def functions(variant, name):
    return [e for e in events(variant) if e.get("cat") == "python_function" and FRAME.fullmatch(e["name"])
            and FRAME.fullmatch(e["name"]).group(3) == name]


def report(cli, variant, *args):
    got = cli("analyze", TRACE[variant], "--format", "json", "--no-cache", *args)
    assert got.exit_code == 0, got.output
    return json.loads(got.output)["reports"][0]


@pytest.mark.parametrize("variant", ["before", "after"])
def test_loop_and_init_copies_are_different_sites_named_by_their_call_lines(cli, variant):
    batch, labels, init = line_of("return batch.to(dev"), line_of("yd = y.to(dev"), line_of("model = model.to(dev)")
    calls = h2d_calls(variant)
    per_line = Counter(next(h["name"].split(" ", 3)[3] for h in hooks(variant) if inside(c, h)) for c in calls)
    assert per_line == {batch: TIMER[variant]["steps"], labels: TIMER[variant]["steps"], init: 18}
    defs = {f"workloads/steady_loop.py:{n}" for n in range(1, 200) if WORKLOAD.read_text().splitlines()[n - 1:n]
            and WORKLOAD.read_text().splitlines()[n - 1].lstrip().startswith("def ")}
    rep = report(cli, variant, "--min-duration", "0", "--top", "100000")
    assert Counter(t["site_line"] for t in rep["top"]) == per_line
    assert not defs & set(per_line) and not any("def@" in (t["site_line"] or "") for t in rep["top"])
    # the init copies (main, line 68) and the loop's batch copies (inputs_to_device, line 38) are apart per site
    sites = {r["group"]: r["calls"] for r in rep["by_site"]}
    assert sum(sites.values()) == len(calls) and len(sites) >= 2
    assert any(g.startswith("workloads/steady_loop.py:inputs_to_device") and n == per_line[batch]
               for g, n in sites.items())


def alloc_truth(variant):
    """The cudaHostAlloc calls: (those before the first copy call, {cause: [ns]} of the later ones made in a function
    of steady_loop.py that made copies (the hook's ranges name it), by the innermost such frame around them):
    host_allocation when a copy was in flight (issued before it ended, its GPU copy ending after it started),
    else new_host_allocation. Also {function: calls} of the later ones."""
    evs = events(variant)
    gpu = {e["args"]["correlation"]: e for e in evs if e.get("cat") == "gpu_memcpy"}
    calls = h2d_calls(variant)
    first = calls[0]["ts"]
    allocs = [a for a in evs if a.get("cat") == "cuda_runtime" and a["name"] in ("cudaHostAlloc", "cudaMallocHost")]
    copy_fns = {h["name"].split(" ")[2] for h in hooks(variant)}
    frames = [e for e in evs if e.get("cat") == "python_function" and FRAME.fullmatch(e["name"])
              and FRAME.fullmatch(e["name"]).group(1) == "steady_loop.py"]
    causes, where = {}, Counter()
    for a in allocs:
        if a["ts"] <= first:
            continue
        fn = FRAME.fullmatch(max((f for f in frames if inside(a, f)), key=lambda f: f["ts"])["name"]).group(3)
        if fn not in copy_fns:
            continue
        flight = any(c["ts"] < a["ts"] + a["dur"] and gpu[c["args"]["correlation"]]["ts"]
                     + gpu[c["args"]["correlation"]]["dur"] > a["ts"] for c in evs
                     if c.get("cat") == "cuda_runtime" and c["args"].get("correlation") in gpu and "Memcpy" in c["name"])
        causes.setdefault("host_allocation" if flight else "new_host_allocation", []).append(round(a["dur"] * 1000))
        where[fn] += 1
    return [a for a in allocs if a["ts"] + a["dur"] < first], causes, where


@pytest.mark.parametrize("variant", ["before", "after"])
def test_the_init_pinned_pool_is_no_cause(cli, variant):
    (init,), _causes, _where = alloc_truth(variant)
    assert init["dur"] > 100_000   # the 512 MiB pool: hundreds of ms, long before the first copy
    rep = report(cli, variant)
    rows = [r for r in rep["by_cause"] if r["cause"].endswith("host_allocation")]
    assert sum(r["calls"] for r in rows) == sum(len(d) for d in _causes.values())   # the later ones only
    assert all(r["max_ns"] < init["dur"] * 1000 and r["host_ns"] < init["dur"] * 1000 for r in rows)
    # the top cause is a copy's (before) or the loop's real growth (after), never the pool
    assert rep["by_cause"][0]["cause"] == ("backlog" if variant == "before" else "host_allocation")


@pytest.mark.parametrize("where_run", ["checkout", "elsewhere"])
def test_the_fix_allocations_inside_inputs_to_device_are_reported_with_their_site(cli, where_run, tmp_path,
                                                                                  monkeypatch):
    """after: .pin_memory() of each new batch size grows the caching host allocator inside inputs_to_device (the
    hook's range holds only the .to() after it); each such call is a cause, most with copies in flight. Run from a
    folder without workloads/steady_loop.py the frames keep torch's `steady_loop.py` while the hook names
    `workloads/steady_loop.py`: still the same function."""
    _init, causes, where = alloc_truth("after")
    assert where["inputs_to_device"] == 14 and alloc_truth("before")[2]["inputs_to_device"] == 0
    prefix = "workloads/steady_loop.py"
    if where_run == "elsewhere":
        monkeypatch.chdir(tmp_path)
        monkeypatch.delenv("NSYSH2D_SOURCE_ROOT", raising=False)
        prefix = "steady_loop.py"
    rep = report(cli, "after")
    got = {r["cause"]: r for r in rep["by_cause"] if r["cause"].endswith("host_allocation")}
    assert {c: (r["calls"], r["host_ns"]) for c, r in got.items()} == {c: (len(d), sum(d)) for c, d in causes.items()}
    line = line_of("def inputs_to_device").rsplit(":", 1)[1]
    assert all(r["longest_site"] == f"{prefix}:inputs_to_device def@{line} > pin_memory()" for r in got.values())


def test_compare_shows_inputs_to_device_host_time_as_the_host_timer_does_with_the_allocation_named(cli):
    """Per call of inputs_to_device, from the trace's python_function events; the timer wraps a little more (the
    labels' copy after it), so the trace's median is within 25 % of the timer's, and below it."""
    durs = {v: sorted(round(f["dur"] * 1000) for f in functions(v, "inputs_to_device")) for v in TRACE}
    for v in TRACE:
        timer_ms = statistics.median(TIMER[v]["inputs_to_device_ms"])
        assert len(durs[v]) == TIMER[v]["steps"]
        assert 0.75 * timer_ms <= statistics.median(durs[v]) / 1e6 <= timer_ms
    after_allocs = alloc_truth("after")[2]["inputs_to_device"]
    got = cli("compare", TRACE["before"], TRACE["after"], "--format", "json", "--no-cache")
    assert got.exit_code == 0, got.output
    doc = json.loads(got.output)["compare"]
    row = next(r for r in doc["functions"] if r["name"].endswith("steady_loop.py:inputs_to_device"))
    assert (row["count_before"], row["count_after"]) == (40, 40)
    assert (row["median_ns_before"], row["median_ns_after"]) == (statistics.median(durs["before"]),
                                                                 statistics.median(durs["after"]))
    assert (row["total_ns_before"], row["total_ns_after"]) == (sum(durs["before"]), sum(durs["after"]))
    alloc = next(g for g in row["grew"] if g["api"] == "cudaHostAlloc")
    assert (alloc["calls_before"], alloc["calls_after"]) == (0, after_allocs)
    assert "cudaHostAlloc" in row["new_apis"]
    assert doc["function_findings"] == []   # faster by median and in total: no "slower" finding
    text = cli("compare", TRACE["before"], TRACE["after"], "--no-cache").output.split("host time per Python function")
    row = next(ln.split() for ln in text[1].splitlines() if "steady_loop.py:inputs_to_device" in ln)
    assert row[1:3] == ["40", "40"]


@pytest.mark.parametrize("spec", ["op:inputs_to_device", "range:Optimizer.zero_grad#SGD.zero_grad"])
def test_steady_after_leaves_out_the_init_copies_and_says_so(cli, spec):
    evs = events("before")
    kind, name = spec.split(":", 1)
    if kind == "op":
        start = min(f["ts"] for f in functions("before", name))
    else:
        start = min(e["ts"] for e in evs if e.get("cat") == "user_annotation" and e["name"] == name)
    calls = [c["ts"] for c in h2d_calls("before")]
    left_out = sum(ts < start for ts in calls)
    assert left_out >= 18   # at least the 18 init weight copies
    rep = report(cli, "before", "--steady-after", spec, "--min-duration", "0")
    assert rep["totals"]["calls"] == len(calls) - left_out
    assert f"{left_out} copy calls before it left out" in rep["steps"]["steady"]
    got = cli("gate", TRACE["before"], "--steady-after", spec, "--no-cache")
    assert f"steady state from {spec}" in got.output and f"{left_out} copy calls before it left out" in got.output


def test_warmup_steps_without_steps_says_it_cannot_apply(cli):
    assert not any(e["name"].startswith("ProfilerStep#") for e in events("before"))
    got = cli("gate", TRACE["before"], "--warmup-steps", "1", "--no-cache")
    assert got.exit_code == 1
    assert "--warmup-steps 1 does not apply: the trace has no step ranges" in " ".join(got.output.split())
