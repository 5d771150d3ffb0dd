"""Exports of old nsys versions and files without ENUM tables (issue 13): decoded with the stable ids, said
once, never a silent zero; a gate never passes copies it cannot classify. Truth comes from plain SQL."""
import json
import shutil
import sqlite3

import pytest

from conftest import DATA, SWEEP_TRACES, sha256

DLPROF = DATA / "thirdparty" / "DLProf__w_Relu_nsys_profile.sqlite"   # nsys 2022.1, no ENUM tables
MORDRED = DATA / "thirdparty" / "mordred__report1_old.sqlite"          # older still, no metadata table
ENUMS = ("ENUM_CUDA_MEM_KIND", "ENUM_CUDA_MEMCPY_OPER", "ENUM_NSYS_EVENT_CLASS")


def async_h2d_truth(path, src_kind=0):
    """Async H2D copies from a source kind, by plain SQL over the export (ids as every ENUM table has them)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute(
            "SELECT count(DISTINCT r.correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
            "JOIN StringIds s ON s.id = r.nameId JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = r.correlationId "
            "WHERE s.value GLOB 'cu*Memcpy*Async*' AND m.copyKind = 1 AND m.srcKind = ?", (src_kind,)).fetchone()[0]
    finally:
        con.close()


def old_layout(src, dst, drop=ENUMS, rename_meta=True):
    """A real export rewritten as old nsys wrote it: no ENUM tables, metadata in EXPORT_META_DATA."""
    shutil.copy(src, dst)
    con = sqlite3.connect(dst)
    for t in drop:
        con.execute(f"DROP TABLE IF EXISTS {t}")
    if rename_meta:
        con.execute("ALTER TABLE META_DATA_EXPORT RENAME TO EXPORT_META_DATA")
    con.commit()
    con.close()
    return dst


def analyze_json(cli, path, *args):
    r = cli("analyze", path, "--format", "json", "--no-cache", *args)
    assert r.exit_code == 0, r.output
    return json.loads(r.output)["reports"][0]


def test_nsys_2022_export_without_enums_is_decoded(cli):
    before = sha256(DLPROF)
    rep = analyze_json(cli, DLPROF)
    assert rep["nsys_version"] == "2022.1.3.3" and rep["schema_version"] == "2.9.1"   # EXPORT_META_DATA
    kinds = {(k["src_kind"], k["dst_kind"]): k["calls"] for k in rep["by_kind"]}
    assert kinds == {("Pageable", "Device"): async_h2d_truth(DLPROF)} and kinds[("Pageable", "Device")] == 11
    assert sum("ids every ENUM table" in w for w in rep["warnings"]) == 1
    assert rep["totals"]["unclassified_calls"] == 0
    assert sha256(DLPROF) == before


def test_oldest_export_without_metadata(cli):
    rep = analyze_json(cli, MORDRED, "--direction", "all")
    assert rep["nsys_version"] is None and rep["gpu"] == "Quadro RTX 6000"
    assert rep["totals"]["calls"] == async_h2d_truth(MORDRED) == 0   # 45 sync cudaMemcpy, no async copy


@pytest.mark.parametrize("name", ["2025.3", "2025.3-cudabacktrace"])
def test_dropped_enums_give_the_same_answer(cli, tmp_path, name):
    real = SWEEP_TRACES[name]
    old = old_layout(real, tmp_path / "old.sqlite")
    a, b = analyze_json(cli, real), analyze_json(cli, old)
    assert a["nsys_version"] == b["nsys_version"] and a["schema_version"] == b["schema_version"]
    for key in ("totals", "by_kind", "by_site", "by_class", "top"):
        assert a[key] == b[key], key
    pageable = [k for k in b["by_kind"] if k["src_kind"] == "Pageable"][0]["calls"]
    assert pageable == async_h2d_truth(old)
    ga, gb = cli("gate", real, "--no-cache"), cli("gate", old, "--no-cache")
    assert (ga.exit_code, gb.exit_code) == (1, 1)


def test_gate_never_passes_copies_it_cannot_classify(cli, tmp_path):
    old = old_layout(SWEEP_TRACES["2025.3"], tmp_path / "odd.sqlite")
    con = sqlite3.connect(old)
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET srcKind = 42, copyKind = 99")
    con.commit()
    con.close()
    r = cli("gate", old, "--no-cache", "--format", "json")
    doc = json.loads(r.output)
    assert r.exit_code == 1 and not doc["passed"]
    rule = [x for x in doc["verdicts"][0]["rules"] if x["name"] == "classified-copies"][0]
    assert not rule["passed"] and rule["message"].startswith("256 copy calls")


def test_gate_kind_is_validated(cli):
    r = cli("gate", SWEEP_TRACES["2025.3"], "--kind", "pagable")
    assert r.exit_code == 2 and "unknown memory kind 'pagable'" in r.output and "Pageable" in r.output
    lower = cli("gate", SWEEP_TRACES["2025.3"], "--kind", "pageable", "--format", "json")
    exact = cli("gate", SWEEP_TRACES["2025.3"], "--kind", "Pageable", "--format", "json")
    assert lower.exit_code == exact.exit_code == 1 and lower.output == exact.output


def kernels_as_graph_replays(src, dst, keep_graph_table=True):
    """A real export rewritten as nsys --cuda-graph-trace=graph writes replays: the queued kernels become
    rows of CUPTI_ACTIVITY_KIND_GRAPH_TRACE and leave the kernel table."""
    shutil.copy(src, dst)
    con = sqlite3.connect(dst)
    if keep_graph_table:
        con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INT NOT NULL, end INT NOT NULL, "
                    "deviceId INT NOT NULL, contextId INT, greenContextId INT, streamId INT NOT NULL, "
                    "correlationId INT, globalPid INT, graphId INT, graphExecId INT)")
        con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE SELECT start, end, deviceId, contextId, NULL, "
                    "streamId, correlationId, globalPid, 1, 1 FROM CUPTI_ACTIVITY_KIND_KERNEL")
    con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL")
    con.commit()
    con.close()
    return dst


def test_backlog_behind_graph_replays(cli, tmp_path):
    real = SWEEP_TRACES["2025.3"]
    graphs = kernels_as_graph_replays(real, tmp_path / "graph.sqlite")
    gone = kernels_as_graph_replays(real, tmp_path / "none.sqlite", keep_graph_table=False)
    a, g, n = (analyze_json(cli, p, "--top", "20") for p in (real, graphs, gone))
    backlog = lambda rep: [t["backlog_ns"] for t in rep["top"]]  # noqa: E731
    assert max(backlog(a)) > 1_000_000            # the real trace has ms of queued kernels ahead
    assert backlog(g) == backlog(a) and g["totals"] == a["totals"]
    assert backlog(n) != backlog(a)               # without the graph rows the backlog is lost
