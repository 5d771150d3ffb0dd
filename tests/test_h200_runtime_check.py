"""The runtime checker validated on the H200 (issue 18): its verdicts against host timers
(workloads/runtime_check_probe.py, tests/data/h200/runtime-check.json), and one run of workloads/qwen3vl.py
under the checker and nsys at once (qwen3vl-check.json and qwen3vl-check.sqlite of the same run): the sites it
flags are the sites the trace analysis finds blocking."""
import json

from conftest import H200

PROBE = json.loads((H200 / "runtime-check.json").read_text())
CHECK = json.loads((H200 / "qwen3vl-check.json").read_text())["runtime_check"]
TRACE = H200 / "qwen3vl-check.sqlite"


def test_every_flagged_copy_blocked_and_every_other_returned_at_once():
    assert len(PROBE) == 10
    for r in PROBE:
        if r["flagged"]:   # waited for the 10 ms of queued kernels (at least half of it)
            assert r["median_host_us"] >= 5000, r
        else:              # each copy returned within 0.5 ms
            assert r["median_host_us"] / r["copies"] < 500, r
    flagged = {r["case"] for r in PROBE if r["flagged"]}
    assert flagged == {"pageable", "numpy-backed", "pinned sliced [:, :n/2]", "pinned transposed + dtype change",
                       "pinned expanded", "copy_ pinned transposed into contiguous"}


def test_checker_sites_equal_the_trace_sites_of_the_same_run(cli):
    r = cli("analyze", TRACE, "--format", "json", "--no-cache")
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)["reports"][0]
    trace_blocking = {g["group"]: g for g in rep["by_site"] if g["blocking_calls"]}
    checker_flagged = {}
    for row in CHECK["by_site"]:
        if row["flagged"]:
            checker_flagged[row["site"]] = checker_flagged.get(row["site"], 0) + row["calls"]
    assert set(checker_flagged) == set(trace_blocking) == {"workloads/qwen3vl_inputs.py:copy_to_device",
                                                            "workloads/qwen3vl_inputs.py:vision_inputs_to_device"}
    for site, calls in checker_flagged.items():   # every copy of those sites, in both
        assert calls == trace_blocking[site]["calls"], site
    # The checker's own frames never stand in for the user's site in the trace.
    assert not any("nsysh2d/" in g["group"] for g in rep["by_site"])
