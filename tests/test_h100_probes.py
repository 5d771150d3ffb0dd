"""Issue 40's probes on the H100 (tests/data/h100/): the launch queue's depth for kernels and for copies, and the
pageable threshold bisected to 64 KiB, recomputed here from the raw per-call host timers the docs quote."""
import gzip
import json
import statistics
from collections import defaultdict

from conftest import DATA

H100 = DATA / "h100"


def probes(name):
    doc = json.loads((H100 / name).read_text())
    out = {(p["queued"], p["call"]): statistics.median(p["host_us"]) for p in doc["probes"]}
    return doc, out


def test_kernel_queue_holds_1021_behind_the_running_kernel():
    doc, p = probes("queue-depth-kernels.json")
    assert [f["first_waiting_launch"] for f in doc["fills"]] == [1021] * 3
    head_us = doc["args"]["head_ms"] * 1000
    assert all(f["wait_us"] > 0.9 * head_us for f in doc["fills"])       # it waited for the head kernel
    assert p[(1020, "launch")] < 100 and p[(1021, "launch")] > 0.9 * head_us
    assert p[(1021, "pinned_copy")] < 1000                                # a copy does not wait for that queue
    assert p[(1022, "launch")] < 2 * doc["args"]["kernel_us"]             # then one short kernel at a time


def test_copy_queue_is_separate_and_as_deep():
    doc, p = probes("queue-depth-copies.json")
    assert doc["args"]["fill_with"] == "pinned_copies"
    assert [f["first_waiting_launch"] for f in doc["fills"]] == [1021] * 3
    head_us = doc["args"]["head_ms"] * 1000
    assert p[(1021, "pinned_copy")] > 0.9 * head_us and p[(1020, "pinned_copy")] < 1000
    assert p[(1021, "launch")] < 1000                                     # a launch does not wait for it


def test_bisected_threshold_is_2_mib_for_one_copy_at_every_backlog():
    with gzip.open(H100 / "bisect.json.gz", "rt") as f:
        records = json.load(f)["records"]
    slow = defaultdict(float)
    for r in records:
        k = (r["variant"], r["backlog_us"], r["inflight"], r["bytes"], r["rep"])
        slow[k] = max(slow[k], r["host_us"])
    waited = defaultdict(list)
    for (v, b, n_in, size, _rep), us in slow.items():
        waited[(v, b, n_in, size)].append(us >= 0.5 * b)

    def waits(v, b, n_in, size):
        w = waited[(v, b, n_in, size)]
        return sum(w) * 2 > len(w)

    kib = 1024
    for v in ("pageable", "numpy_from", "pinned_strided"):
        for b in (2000, 10000, 50000):
            assert not waits(v, b, 1, 2048 * kib) and waits(v, b, 1, 2112 * kib)
            assert not any(waits(v, b, 1, s * kib) for s in range(64, 2049, 64))
        assert not waits(v, 10000, 2, 1024 * kib) and waits(v, 10000, 2, 1088 * kib)
        assert not waits(v, 10000, 4, 64 * kib) and waits(v, 10000, 4, 128 * kib)
