"""H200 captures of workloads/graph_probe.py (issue 13.4): one 8 MiB pageable copy per step behind 10 ms of
queued GPU work, eager kernels vs one CUDA graph replay, traced with --cuda-graph-trace=graph (the default:
a replay is one GRAPH_TRACE row) and =node (its kernels in the kernel table). The backlog must match a
plain-SQL computation over the file exactly, and the host timer of a run without nsys within 15%."""
import json
import re
import sqlite3
import statistics

import pytest

from conftest import H200

TRACES = {"eager": H200 / "graph-probe-eager.sqlite", "graph": H200 / "graph-probe-graph.sqlite",
          "node": H200 / "graph-probe-node-graph.sqlite"}
HOST = (H200 / "graph-host.txt").read_text()


def host_median_ns(variant):
    return 1000 * float(re.search(rf"variant={variant} .* median_us=(\d+)", HOST).group(1))


def sql_backlogs(path, work_table):
    """Per copy call, by plain SQL: end of the latest work item on the copy's stream that started before the
    copy's GPU start, minus the call's start (0 when that work had already drained)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return sorted(con.execute(f"""
            SELECT max(0, (SELECT w.end FROM {work_table} w WHERE w.streamId = m.streamId AND w.deviceId = m.deviceId
                           AND w.start < m.start ORDER BY w.start DESC LIMIT 1) - r.start)
            FROM CUPTI_ACTIVITY_KIND_RUNTIME r
            JOIN StringIds s ON s.id = r.nameId AND s.value GLOB 'cu*Memcpy*Async*'
            JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = r.correlationId AND m.copyKind = 1""").fetchall())
    finally:
        con.close()


def report(cli, path):
    r = cli("analyze", path, "--format", "json", "--no-cache", "--top", "50")
    assert r.exit_code == 0, r.output
    return json.loads(r.output)["reports"][0]


@pytest.mark.parametrize("name,table", [("graph", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"),
                                        ("node", "CUPTI_ACTIVITY_KIND_KERNEL"),
                                        ("eager", "CUPTI_ACTIVITY_KIND_KERNEL")])
def test_backlog_equals_plain_sql(cli, name, table):
    rep = report(cli, TRACES[name])
    got = sorted((t["backlog_ns"],) for t in rep["top"])
    assert len(got) == rep["totals"]["calls"] == 8
    assert got == sql_backlogs(TRACES[name], table)


@pytest.mark.parametrize("name,variant", [("graph", "graph"), ("node", "graph"), ("eager", "eager")])
def test_backlog_matches_the_host_timer(cli, name, variant):
    rep = report(cli, TRACES[name])
    backlog = statistics.median(t["backlog_ns"] for t in rep["top"])
    assert abs(backlog - host_median_ns(variant)) <= 0.15 * host_median_ns(variant)
    assert rep["totals"]["blocking_calls"] == 8   # every copy waited for the replay


def test_graph_replay_is_no_longer_invisible(cli):
    graph = report(cli, TRACES["graph"])
    eager = report(cli, TRACES["eager"])
    g = statistics.median(t["backlog_ns"] for t in graph["top"])
    e = statistics.median(t["backlog_ns"] for t in eager["top"])
    assert g > 9_000_000 and abs(g - e) <= 0.15 * e
