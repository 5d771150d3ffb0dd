"""The Kineto reader on damaged input (issue 39): random cuts, byte edits and JSON-level edits of a small real
trace never end in a traceback, a hang or a changed input file: a report (exit 0) or one line (exit 2)."""
import gzip
import json
import os

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import DATA

SRC = DATA / "kineto" / "api-probe.pt.trace.json.gz"


def small_trace() -> bytes:
    doc = json.loads(gzip.open(SRC, "rt").read())
    keep = [e for e in doc["traceEvents"] if e.get("cat") in ("cuda_runtime", "gpu_memcpy", "kernel",
                                                              "user_annotation", "cpu_op")][:400]
    doc["traceEvents"] = keep
    return json.dumps(doc).encode()


BASE = small_trace()


def run(tmp_path, data: bytes):
    from click.testing import CliRunner

    from nsysh2d.cli import main

    path = tmp_path / "t.json"
    path.write_bytes(data)
    r = CliRunner().invoke(main, ["analyze", str(path), "--no-cache", "--format", "json"])
    assert r.exit_code in (0, 2), (r.exit_code, r.output[-500:])
    if r.exit_code == 2:
        errors = json.loads(r.stdout)["errors"]
        assert len(errors) == 1 and "\n" not in errors[0]["error"]
    assert path.read_bytes() == data


# NSYSH2D_FUZZ_EXAMPLES raises the count for a longer run (docs/kineto.md has the last one).
FUZZ = settings(max_examples=int(os.environ.get("NSYSH2D_FUZZ_EXAMPLES", "40")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FUZZ
@given(cut=st.integers(0, len(BASE)))
def test_truncated_anywhere(tmp_path, cut):
    run(tmp_path, BASE[:cut])


@FUZZ
@given(edits=st.lists(st.tuples(st.integers(0, len(BASE) - 1), st.integers(0, 255)), min_size=1, max_size=8))
def test_bytes_edited(tmp_path, edits):
    data = bytearray(BASE)
    for pos, value in edits:
        data[pos] = value
    run(tmp_path, bytes(data))


JUNK = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                 st.text(max_size=8), st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3),
                                                                                         st.integers(), max_size=2),
                 # half a surrogate pair, which JSON can spell ("\ud800") and st.text() never makes
                 st.text(st.sampled_from(["\ud800", "\udfff", "a", "\u00e9"]), min_size=1, max_size=4))


@FUZZ
@example(edits=[(0, "ts", 1.797693134862316e+305)])   # finite, but its ns overflowed to infinity (a CI run found it)
@example(edits=[(i, "name", "\ud800") for i in range(6)])   # was an internal error (UnicodeEncodeError), exit 70
@given(edits=st.lists(st.tuples(st.integers(0, 399), st.sampled_from(["ts", "dur", "pid", "tid", "name", "cat",
                                                                          "args", "correlation", "bytes", "ph"]),
                                 JUNK), min_size=1, max_size=6))
def test_fields_replaced(tmp_path, edits):
    doc = json.loads(BASE)
    for i, key, value in edits:
        ev = doc["traceEvents"][i % len(doc["traceEvents"])]
        if key in ("correlation", "bytes"):
            if isinstance(ev.get("args"), dict):
                ev["args"][key] = value
        else:
            ev[key] = value
    run(tmp_path, json.dumps(doc).encode())


LEGACY_SRC = DATA / "thirdparty" / "kineto-tb-plugin__resnet50_num_workers_0__worker0.1623143566756.pt.trace.json.gz"


def small_legacy_trace() -> bytes:
    """The 2021 layout (tests/test_kineto_legacy.py): the events within 2 ms of one long copy call."""
    doc = json.loads(gzip.open(LEGACY_SRC, "rt").read())
    call = next(e for e in doc["traceEvents"] if e.get("name") == "cudaMemcpyAsync" and e["dur"] >= 1000)
    keep = [e for e in doc["traceEvents"] if e.get("cat") in ("Runtime", "Memcpy", "Kernel", "Operator")
            and abs(e["ts"] - call["ts"]) <= 2000]
    doc["traceEvents"] = keep[:400]
    return json.dumps(doc).encode()


LEGACY = small_legacy_trace()


@FUZZ
@given(edits=st.lists(st.tuples(st.integers(0, 399), st.sampled_from(["ts", "dur", "tid", "name", "cat", "args",
                                                                          "Call stack", "Input Dims"]),
                                 st.one_of(JUNK, st.sampled_from(["Runtime", "Operator", "", ";", "a(1): f;;b(x): g"]))),
                      min_size=1, max_size=6))
def test_legacy_fields_replaced(tmp_path, edits):
    doc = json.loads(LEGACY)
    for i, key, value in edits:
        ev = doc["traceEvents"][i % len(doc["traceEvents"])]
        if key in ("Call stack", "Input Dims"):
            if isinstance(ev.get("args"), dict):
                ev["args"][key] = value
        else:
            ev[key] = value
    run(tmp_path, json.dumps(doc).encode())


def test_the_legacy_slice_is_a_report(tmp_path, cli):
    path = tmp_path / "t.json"
    path.write_bytes(LEGACY)
    got = json.loads(cli("analyze", path, "--no-cache", "--format", "json").output)["reports"][0]
    assert got["totals"]["long_calls"] == 1 and got["top"][0]["site_line"] == "resnet50_profiler_api.py:44"
