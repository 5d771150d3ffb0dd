"""Issue 54, classes 2, 6 and 10: the gate judges what moved, not labels an editor can change; step ranges cannot
narrow or dilute the judgement silently; traces that cannot be compared are said to be so (docs/security.md).

Each hostile file is an edited copy of a bundled real trace; the truth it hides is counted by plain SQL (sqlite3)
or plain JSON arithmetic here, never by nsysh2d. Each edit made the gate PASS on main 687e296."""
import gzip
import json
import sqlite3

import pytest

from conftest import H200, edited_copy, run_cli

PROBE = H200 / "api-probe.sqlite"   # 8 long-blocking pageable copies, 24 step ranges
QWEN = H200 / "qwen3vl-before.sqlite"   # 8 step ranges; 4 long-blocking copies
KINETO = H200.parent / "kineto" / "qwen3vl-before.pt.trace.json.gz"
LONG_ASYNC = ("(SELECT r.rowid FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
              "WHERE s.value GLOB 'cu*Memcpy*Async*' AND r.end - r.start > 1000000)")
LONG_COPIES = ("(SELECT m.rowid FROM CUPTI_ACTIVITY_KIND_MEMCPY m JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
               f"ON r.correlationId = m.correlationId WHERE r.rowid IN {LONG_ASYNC})")


def edited(tmp_path, *statements, source=PROBE) -> str:
    return str(edited_copy(source, tmp_path / "edited.sqlite", *statements))


def sql(path, query):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute(query).fetchone()[0]
    finally:
        con.close()


def long_host_to_device_copies(path) -> int:
    """Async copy calls over 1 ms whose activity moved pageable memory (srcKind 0: CUPTI's id) to the device
    (dstKind 2), in the call's process, whatever the copy kind says."""
    return sql(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r NOT INDEXED JOIN CUPTI_ACTIVITY_KIND_MEMCPY m "
                     "ON m.correlationId = r.correlationId AND m.globalPid = (r.globalTid / 16777216) * 16777216 "
                     "WHERE m.srcKind = 0 AND m.dstKind = 2 AND r.end - r.start > 1000000 AND r.nameId IN "
                     "(SELECT id FROM StringIds WHERE value GLOB 'cu*Memcpy*Async*')")


def gate_json(path, *args):
    r = run_cli("gate", path, "--format", "json", "--no-cache", *args)
    return r, (json.loads(r.stdout) if r.stdout.strip() else None)


def failed(doc) -> dict:
    return {r["name"]: r["message"] for v in doc["verdicts"] for r in v["rules"] if not r["passed"]}


def rule(doc, name) -> dict:
    return next(r for v in doc["verdicts"] for r in v["rules"] if r["name"] == name)


# ------------------------------------------------------------------------------- class 2: what moved, not labels
@pytest.mark.parametrize("copy_kind,label", [(8, "Device-to-Device"), (2, "Device-to-Host"), (9, "Host-to-Host")])
def test_a_copy_kind_that_contradicts_the_memory_kinds_fails_the_gate(tmp_path, copy_kind, label):
    """copyKind edited on the long copies only: the memory kinds still say Pageable -> Device. Main read the
    direction from the copy kind alone (D2D, D2H: not judged; H2H: judged, but no contradiction named)."""
    path = edited(tmp_path, f"UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET copyKind = {copy_kind} WHERE rowid IN {LONG_COPIES}")
    assert long_host_to_device_copies(path) == 8
    assert sql(path, f"SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = {copy_kind} "
                     "AND srcKind = 0 AND dstKind = 2") == 8
    r, doc = gate_json(path)
    assert r.returncode == 1, r.stderr
    why = failed(doc)
    assert (f"8 copy calls whose copyKind {copy_kind} ({label}) contradicts their memory kinds srcKind 0 "
            "(Pageable) -> dstKind 2 (Device)") in why["consistent-trace"], why
    # the direction comes from the memory kinds: the copies are judged as the H2D copies they are
    assert "8 long-blocking h2d copies" in why["max-long-calls"], why


@pytest.mark.parametrize("table,column,where", [
    ("ENUM_CUDA_MEMCPY_OPER", "copyKind", "Device-to-Device"),
    ("ENUM_CUDA_MEM_KIND", "srcKind", "Device"),
    ("ENUM_CUDA_MEM_KIND", "srcKind", "Pinned"),
])
def test_an_id_cupti_does_not_define_fails_the_gate_whatever_the_file_calls_it(tmp_path, table, column, where):
    """The long copies moved to id 99, which the file's own ENUM table labels as something harmless."""
    path = edited(tmp_path, f"INSERT INTO {table} (id, name, label) VALUES (99, 'CRAFTED', '{where}')",
                  f"UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET {column} = 99 WHERE rowid IN {LONG_COPIES}")
    assert sql(path, f"SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE {column} = 99") == 8
    assert sql(path, f"SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN CUPTI_ACTIVITY_KIND_MEMCPY m "
                     f"ON m.correlationId = r.correlationId WHERE m.{column} = 99 AND r.end - r.start > 1000000") == 8
    r, doc = gate_json(path)
    assert r.returncode == 1, r.stderr
    why = failed(doc)
    assert "8 copy calls whose memory or copy kind cannot be decoded" in why["classified-copies"], why
    assert f"{column} 99 (the file's {table} calls it '{where}')" in why["consistent-trace"], why


@pytest.mark.parametrize("src,dst", [(7, 7), (4, 4), (0, 7)])
def test_a_copy_whose_direction_no_field_tells_fails_the_gate(tmp_path, src, dst):
    """copyKind 0 (Unknown) and memory kinds that do not tell host from device on both sides (Unknown, Managed):
    main read the long copies as direction "other", not judged, and passed."""
    path = edited(tmp_path, f"UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET copyKind = 0, srcKind = {src}, dstKind = {dst} "
                            f"WHERE rowid IN {LONG_COPIES}")
    assert sql(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN CUPTI_ACTIVITY_KIND_MEMCPY m "
                     f"ON m.correlationId = r.correlationId WHERE m.copyKind = 0 AND m.srcKind = {src} "
                     f"AND m.dstKind = {dst} AND r.end - r.start > 1000000") == 8
    r, doc = gate_json(path)
    assert r.returncode == 1, r.stderr
    assert "8 copy calls whose memory or copy kind cannot be decoded" in failed(doc)["classified-copies"], doc


def test_copy_calls_renamed_to_a_graph_launch_excuse_no_copy(tmp_path):
    """The 8 long calls renamed cudaGraphLaunch (same process, same correlationId): their copies have no graph
    node id, so no graph made them. Real graph copies carry one (nsys --cuda-graph-trace=node)."""
    path = edited(tmp_path,
                  "INSERT INTO StringIds SELECT max(id) + 1, 'cudaGraphLaunch_v10000' FROM StringIds",
                  "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = (SELECT id FROM StringIds WHERE value = "
                  f"'cudaGraphLaunch_v10000') WHERE rowid IN {LONG_ASYNC}")
    # the copies are still there, claimed by a same-process "graph launch", and name no graph node
    assert sql(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY m JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
                     "ON r.correlationId = m.correlationId AND m.globalPid = (r.globalTid / 16777216) * 16777216 "
                     "JOIN StringIds s ON s.id = r.nameId WHERE s.value = 'cudaGraphLaunch_v10000' AND m.srcKind = 0 "
                     "AND m.graphNodeId IS NULL AND r.end - r.start > 1000000") == 8
    r, doc = gate_json(path)
    assert r.returncode == 1, r.stderr
    assert "8 copies that no copy API call claims" in failed(doc)["classified-copies"], doc


def test_copies_with_a_graph_node_id_stay_the_graph_launchs(tmp_path):
    """The excuse still holds for what a graph made: the same copies given a graph node id (as nsys writes a
    graph's memcpy node) belong to the launch and are not counted as unclaimed."""
    path = edited(tmp_path,
                  f"UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET graphNodeId = 1000 + rowid WHERE rowid IN {LONG_COPIES}",
                  "INSERT INTO StringIds SELECT max(id) + 1, 'cudaGraphLaunch_v10000' FROM StringIds",
                  "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = (SELECT id FROM StringIds WHERE value = "
                  f"'cudaGraphLaunch_v10000') WHERE rowid IN {LONG_ASYNC}")
    assert sql(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE graphNodeId IS NOT NULL") == 8
    doc = json.loads(run_cli("analyze", path, "--format", "json", "--no-cache").stdout)["reports"][0]
    assert doc["totals"]["activity_without_call"] == 0


def kineto_edited(tmp_path, rename) -> str:
    """qwen3vl-before's Kineto trace with its Pageable -> Device copies renamed by `rename`."""
    doc = json.loads(gzip.open(KINETO).read())
    for e in doc["traceEvents"]:
        if e.get("cat") == "gpu_memcpy" and e.get("name") == "Memcpy HtoD (Pageable -> Device)":
            e["name"] = rename(e["name"])
    path = tmp_path / "edited.pt.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return str(path)


def long_pageable_kineto(path) -> int:
    """Plain JSON: GPU copies whose name says Pageable -> Device, whose copy call lasted >= 100 us."""
    events = json.loads(gzip.open(path).read())["traceEvents"]
    calls = {e["args"]["correlation"]: e["dur"] for e in events
             if e.get("cat") == "cuda_runtime" and "Memcpy" in e.get("name", "")}
    return sum(1 for e in events if e.get("cat") == "gpu_memcpy" and "(Pageable -> Device)" in e.get("name", "")
               and calls.get(e["args"]["correlation"], 0) >= 100)


@pytest.mark.slow   # ~20 s each: a 10 MB Kineto trace read three times
@pytest.mark.parametrize("rename", [lambda n: n + " ", lambda n: n.replace("HtoD", "XtoY"),
                                    lambda n: n.replace("Pageable", "Pagable")])
def test_a_kineto_copy_whose_name_does_not_parse_fails_the_gate(tmp_path, rename):
    path = kineto_edited(tmp_path, rename)
    assert long_pageable_kineto(KINETO) == 4   # the copies the edit hides from main's gate (it passed)
    events = json.loads(gzip.open(path).read())["traceEvents"]
    assert sum(e.get("name") == rename("Memcpy HtoD (Pageable -> Device)") for e in events) == 13
    r, doc = gate_json(path)
    assert r.returncode == 1, r.stderr
    why = failed(doc)
    assert "13 copy calls whose memory or copy kind cannot be decoded" in why["classified-copies"], why


# ------------------------------------------------------------------------------- class 6: step ranges
STEP_TID = "(SELECT globalTid FROM NVTX_EVENTS WHERE text IN ('step 0', 'phase 0'))"   # the copies' thread
NO_STEPS = "UPDATE NVTX_EVENTS SET text = 'phase' || substr(text, 5) WHERE text GLOB 'step [0-9]*'"
BLOCKING = ("FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = r.correlationId "
            "AND m.globalPid = (r.globalTid / 16777216) * 16777216 WHERE m.srcKind = 0 AND m.dstKind = 2 "
            "AND r.eventClass = 0 AND r.end - r.start > 300000 AND r.end >= m.start AND r.nameId IN "
            "(SELECT id FROM StringIds WHERE value GLOB 'cu*Memcpy*Async*')")


def long_pageable_in_qwen(path) -> int:
    """qwen3vl-before's 4 long-blocking copies (plain SQL): its async Pageable -> Device calls (CUDA runtime rows,
    not their backtrace twins) over 300 us that returned after their GPU copy had started."""
    return sql(path, f"SELECT count(*) {BLOCKING}")


def step_ranges(path, where="text GLOB 'step *'") -> int:
    return sql(path, f"SELECT count(*) FROM NVTX_EVENTS WHERE {where}")


def test_one_step_around_the_run_with_a_warmup_step_judges_the_whole_run(tmp_path):
    """Main judged 'copies during 0 of 1 step ranges' and passed."""
    path = edited(tmp_path, NO_STEPS,
                  "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) SELECT min(start) - 1, "
                  f"max(end) + 1, 59, 'step whole', {STEP_TID} FROM CUPTI_ACTIVITY_KIND_RUNTIME", source=QWEN)
    assert step_ranges(path) == 1 and long_pageable_in_qwen(path) == 4
    assert sql(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r, NVTX_EVENTS n WHERE n.text = 'step whole' "
                     "AND (r.start < n.start OR r.end > n.end OR r.globalTid / 16777216 <> n.globalTid / 16777216)"
                     ) == 0   # the range holds every call, on the calls' process
    r, doc = gate_json(path, "--warmup-steps", "1")
    assert r.returncode == 1, r.stderr
    msg = failed(doc)["max-long-calls"]
    assert msg.startswith("4 long-blocking h2d copies") and "judged: every copy of the run" in msg, msg
    assert "as --warmup-steps 1 leaves none of the 1 step ranges" in msg, msg


def test_one_tiny_step_range_leaves_no_long_copy_unjudged(tmp_path):
    """A 20 us step range at the start of the run: main judged the one step (no copy in it) and passed with the
    long-blocking copies 'outside steps, not judged'."""
    path = edited(tmp_path, NO_STEPS,
                  "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) SELECT min(start), "
                  f"min(start) + 20000, 59, 'step tiny', {STEP_TID} FROM CUPTI_ACTIVITY_KIND_RUNTIME", source=QWEN)
    assert step_ranges(path) == 1 and long_pageable_in_qwen(path) == 4
    assert sql(path, f"SELECT count(*) {BLOCKING} AND r.start BETWEEN (SELECT start FROM NVTX_EVENTS WHERE text = "
                     "'step tiny') AND (SELECT end FROM NVTX_EVENTS WHERE text = 'step tiny')") == 0
    r, doc = gate_json(path)
    assert r.returncode == 1, r.stderr
    msg = failed(doc)["max-long-calls"]
    assert msg.startswith("4 long-blocking h2d copies") and "judged: every copy of the run" in msg, msg
    assert "only 0 of its 27 copy calls from the first step on ran during the 1 step ranges (fewer than half)" in msg, msg


def test_a_tiny_step_after_a_step_around_the_run_judges_the_whole_run(tmp_path):
    """One step around the whole run, then a 20 us step after it, --warmup-steps 1: every copy ran in the warm-up
    step, the judged step holds none. Main judged 'copies during 1 of 2 step ranges' and passed."""
    path = edited(tmp_path, NO_STEPS,
                  "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) SELECT min(start) - 1, "
                  f"max(end) + 1, 59, 'step whole', {STEP_TID} FROM CUPTI_ACTIVITY_KIND_RUNTIME",
                  "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) SELECT end + 1000, end + 21000, "
                  "59, 'step tiny', globalTid FROM NVTX_EVENTS WHERE text = 'step whole'", source=QWEN)
    assert step_ranges(path) == 2 and long_pageable_in_qwen(path) == 4
    assert sql(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r, NVTX_EVENTS n WHERE n.text = 'step tiny' "
                     "AND r.end > n.start AND r.start < n.end") == 0   # no call during the judged step
    r, doc = gate_json(path, "--warmup-steps", "1")
    assert r.returncode == 1, r.stderr
    msg = failed(doc)["max-long-calls"]
    assert msg.startswith("4 long-blocking h2d copies") and "judged: every copy of the run" in msg, msg
    assert "the 1 step ranges past the warm-up hold none of its 27 copy calls" in msg, msg


@pytest.mark.parametrize("what,insert", [
    ("1 ns ranges", "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) SELECT (SELECT max(end) FROM "
                    f"NVTX_EVENTS) + 10 * x, (SELECT max(end) FROM NVTX_EVENTS) + 10 * x + 1, 59, 'step fake', {STEP_TID} "
                    "FROM i"),
    # each on a thread of its own (same process), one ns later than the one before: overlapping, not nested
    ("copies of a step", "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) SELECT start + x, end + x, "
                         "59, 'step fake', globalTid + x FROM NVTX_EVENTS, i WHERE text = 'step 4'"),
])
def test_degenerate_step_ranges_do_not_dilute_the_per_step_figure(tmp_path, what, insert):
    """5000 step ranges of 1 ns, or 5000 copies of step 4: main divided by 5008 steps and passed
    --max-blocked-per-step 1ms."""
    path = edited(tmp_path, f"WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 5000) {insert}",
                  source=QWEN)
    assert step_ranges(path, "text GLOB 'step [0-9]*'") == 8 and step_ranges(path, "text = 'step fake'") == 5000
    per_step = sql(path, f"SELECT sum(r.end - r.start) {BLOCKING}") / 8
    assert per_step > 1_000_000   # 14.03 ms over the 8 real steps
    r, doc = gate_json(path, "--max-blocked-per-step", "1ms", "--max-long-calls", "100")
    assert r.returncode == 1, r.stderr
    msg = failed(doc)["max-blocked-per-step"]
    assert msg.startswith(f"{per_step / 1e6:.3f} ms host time in long-blocking copies per step over 8 steps"), msg
    assert "5000 ranges matching the step pattern not counted" in rule(doc, "max-long-calls")["message"]


# ------------------------------------------------------------------------------- class 10: nothing alike
D2H = H200 / "d2h-probe.sqlite"   # device-to-host copies only


@pytest.fixture(scope="module")
def qwen_baseline(tmp_path_factory) -> str:
    """A baseline of qwen3vl-before.sqlite as it is, made once for the tests below."""
    out = tmp_path_factory.mktemp("baseline") / "baseline.json"
    r = run_cli("baseline", QWEN, "-o", out, "--no-cache")
    assert r.returncode == 0, r.stderr
    return str(out)


@pytest.mark.parametrize("what,trace,edit,reason", [
    ("another GPU", QWEN, "UPDATE TARGET_INFO_GPU SET name = 'NVIDIA H100 80GB HBM3'",
     "captured on different GPUs ('NVIDIA H200' in the baseline, 'NVIDIA H100 80GB HBM3' in this trace)"),
    ("no step ranges", QWEN, NO_STEPS, "step ranges only in the baseline"),
    ("no h2d copies", D2H, None, "no h2d copy calls in this trace"),
])
def test_a_trace_that_cannot_be_compared_fails_the_gate_with_a_baseline(tmp_path, qwen_baseline, what, trace, edit,
                                                                        reason):
    """Baseline: qwen3vl-before as it is. Main passed each trace: the same findings (another GPU; steps gone,
    compared in total), or none at all (a trace with no H2D copy)."""
    base = qwen_baseline
    path = edited(tmp_path, edit, source=trace) if edit else str(trace)
    gpus = {sql(p, "SELECT group_concat(DISTINCT name) FROM TARGET_INFO_GPU") for p in (QWEN, path)}
    steps = [step_ranges(p, "text GLOB 'step [0-9]*'") for p in (QWEN, path)]
    h2d = sql(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE srcKind IN (0, 1) AND dstKind = 2")
    assert (len(gpus) == 2) == (what == "another GPU") and (steps == [8, 0]) == (what == "no step ranges")
    assert (h2d == 0) == (what == "no h2d copies")
    r, doc = gate_json(path, "--baseline", base)
    assert r.returncode == 1, r.stderr
    assert reason in failed(doc)["comparable-baseline"], doc


def test_the_same_workload_stays_comparable(qwen_baseline):
    """qwen3vl-before's baseline against the trace of its fix (same GPU, steps, kinds and sites): no such rule."""
    r, doc = gate_json(H200 / "qwen3vl-after.sqlite", "--baseline", qwen_baseline)
    assert r.returncode == 0 and "comparable-baseline" not in {x["name"] for v in doc["verdicts"] for x in v["rules"]}


@pytest.mark.slow   # four compares: ~13 s
def test_compare_says_when_traces_have_nothing_alike(tmp_path):
    """qwen3vl-before against api-probe: no NVTX range name in common (plain SQL), and api-probe names no call
    site (no Python backtraces). compare says so in JSON and in its table; qwen before/after stays comparable."""
    names = [{row[0] for row in sqlite3.connect(f"file:{p}?mode=ro", uri=True).execute(
        "SELECT DISTINCT COALESCE(n.text, s.value) FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
        "WHERE COALESCE(n.text, s.value) NOT GLOB 'step *'")} for p in (QWEN, PROBE)]
    assert names[0] and names[1] and not names[0] & names[1]
    r = run_cli("compare", QWEN, PROBE, "--format", "json", "--no-cache")
    doc = json.loads(r.stdout)["compare"]
    assert doc["comparable"] is False
    assert doc["not_comparable"] == ["no call site and no NVTX range of a copy in common"]
    text = run_cli("compare", QWEN, PROBE, "--no-cache").stdout
    assert "NOT COMPARABLE: no call site and no NVTX range of a copy in common" in text
    assert run_cli("compare", QWEN, PROBE, "--format", "html", "-o", tmp_path / "c.html", "--no-cache").returncode == 0
    assert "NOT COMPARABLE: no call site and no NVTX range of a copy in common" in (tmp_path / "c.html").read_text()
    same = json.loads(run_cli("compare", QWEN, H200 / "qwen3vl-after.sqlite", "--format", "json", "--no-cache").stdout)
    assert same["compare"]["comparable"] is True and same["compare"]["not_comparable"] == []
