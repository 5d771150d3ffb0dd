"""The analyzer core on real H200 exports (two nsys versions, four capture-option sets)."""
import json

import pytest

from conftest import SWEEP_TRACES, listing, sha256
from nsysh2d.analysis import Analysis, Options, parse_duration
from nsysh2d.errors import NsysH2DError


def per_kind(path):
    a = Analysis.open(str(path))
    try:
        df = a.by_kind(Options(direction="all"))
        return {(r["src_kind"], r["dst_kind"]): (r["calls"], r["bytes"]) for r in df.to_dicts()}
    finally:
        a.close()


def test_same_program_same_copies_across_nsys_versions_and_capture_options():
    # All four captured the same program: 96 pageable + 160 pinned H2D copies, whatever extra rows
    # (CUDA backtrace duplicates, Python backtrace marks, sampling) the capture options added.
    results = {name: per_kind(p) for name, p in SWEEP_TRACES.items()}
    first = results["2025.3"]
    assert first[("Pageable", "Device")][0] == 96
    assert first[("Pinned", "Device")][0] == 160
    for name, r in results.items():
        assert r == first, name


@pytest.mark.parametrize("name,schema", [("2023.4", "3.7.2"), ("2025.3", "3.20.3")])
def test_both_schema_versions(name, schema):
    a = Analysis.open(str(SWEEP_TRACES[name]))
    try:
        rep = a.report(Options())
    finally:
        a.close()
    assert rep["schema_version"] == schema
    assert rep["gpu"] == "NVIDIA H200"
    assert rep["totals"]["calls"] == 256
    # Long pageable copies exist in every capture (the exact count is timing-dependent).
    kinds = {r["src_kind"]: r for r in rep["by_kind"]}
    assert kinds["Pageable"]["long_calls"] > 10
    assert kinds["Pinned"]["long_calls"] == 0


def test_backtrace_rows_fold_into_one_call():
    # The cudabacktrace capture has two runtime rows per memcpy (runtime + backtrace event class).
    import sqlite3

    path = SWEEP_TRACES["2025.3-cudabacktrace"]
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
                       "WHERE s.value LIKE 'cudaMemcpyAsync%'").fetchone()[0]
    con.close()
    assert rows == 512
    a = Analysis.open(str(path))
    copies = a.copies()
    a.close()
    assert copies.height == 256
    assert copies["correlation_id"].n_unique() == 256
    assert copies["callchain_id"].null_count() == 0


def test_long_definition_matches_direct_sql():
    import sqlite3

    path = SWEEP_TRACES["2025.3"]
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    expected = con.execute("""
        SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r
        JOIN StringIds s ON s.id = r.nameId
        JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = r.correlationId
        JOIN ENUM_CUDA_MEM_KIND k ON k.id = m.srcKind
        WHERE s.value LIKE 'cudaMemcpy%Async%' AND k.label = 'Pageable' AND r.end - r.start >= 250000""").fetchone()[0]
    con.close()
    a = Analysis.open(str(path))
    kinds = {r["src_kind"]: r for r in a.by_kind(Options(min_ns=250_000)).to_dicts()}
    a.close()
    assert kinds["Pageable"]["long_calls"] == expected > 0


def test_cli_json_contract(cli):
    r = cli("analyze", SWEEP_TRACES["2025.3"], "--format", "json", "--min-duration", "1ms")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    rep = doc["reports"][0]
    for key in ("path", "nsys_version", "schema_version", "min_duration_ns", "by_kind", "top", "totals", "steps"):
        assert key in rep
    assert rep["min_duration_ns"] == 1_000_000
    kinds = {(k["src_kind"], k["dst_kind"]): k for k in rep["by_kind"]}
    assert set(kinds) == {("Pageable", "Device"), ("Pinned", "Device")}
    for k in kinds.values():
        assert set(k) >= {"src_kind", "dst_kind", "calls", "long_calls", "long_ns", "p50_ns", "p99_ns", "max_ns", "bytes"}
        assert k["p50_ns"] <= k["p99_ns"] <= k["max_ns"]
    assert all(t["host_ns"] >= 1_000_000 for t in rep["top"])
    assert [t["host_ns"] for t in rep["top"]] == sorted((t["host_ns"] for t in rep["top"]), reverse=True)


@pytest.mark.parametrize("fmt,marker", [("table", "by source/destination memory kind"), ("markdown", "| src kind |"),
                                         ("csv", "src_kind,dst_kind,calls")])
def test_cli_formats(cli, fmt, marker):
    r = cli("analyze", SWEEP_TRACES["2023.4"], "--format", fmt)
    assert r.exit_code == 0
    assert marker in r.stdout
    assert "Pageable" in r.stdout


def test_direction_and_top(cli):
    r = cli("analyze", SWEEP_TRACES["2025.3"], "--direction", "d2h", "--format", "json")
    assert json.loads(r.stdout)["reports"][0]["totals"]["calls"] == 0
    r = cli("analyze", SWEEP_TRACES["2025.3"], "--top", "3", "--format", "json", "--min-duration", "10us")
    assert len(json.loads(r.stdout)["reports"][0]["top"]) == 3


def test_input_untouched_and_nothing_written_beside(tmp_path, cli):
    folder = tmp_path / "shared volume"
    folder.mkdir()
    trace = folder / "t.sqlite"
    trace.write_bytes(SWEEP_TRACES["2025.3"].read_bytes())
    trace.chmod(0o444)
    folder.chmod(0o555)  # a read-only folder, as on a shared volume (root could still write: we check)
    try:
        before, files = sha256(trace), listing(folder)
        for args in ([], ["--no-cache"], ["--by", "site"]):
            r = cli("analyze", trace, *args)
            assert r.exit_code == 0
        assert sha256(trace) == before
        assert listing(folder) == files
    finally:
        folder.chmod(0o755)


def test_parse_duration():
    assert parse_duration("100us") == 100_000
    assert parse_duration("1.5ms") == 1_500_000
    assert parse_duration("1 ms") == parse_duration("1ms") == 1_000_000
    assert parse_duration("0") == 0
    with pytest.raises(NsysH2DError, match="give its unit"):
        parse_duration("250")   # bare numbers are ambiguous (issue 14)
    assert parse_duration("2 s") == 2_000_000_000
    with pytest.raises(Exception):
        parse_duration("fast")


def test_bad_min_duration_is_usage_error(cli):
    r = cli("analyze", SWEEP_TRACES["2025.3"], "--min-duration", "soon")
    assert r.exit_code == 2
    assert r.stderr.count("\n") == 1 and "bad duration" in r.stderr


def test_python_api():
    import nsysh2d

    a = nsysh2d.open(str(SWEEP_TRACES["2025.3"]))
    try:
        df = a.copies()
        assert df.height == 256 and {"host_ns", "gpu_ns", "bytes", "src_kind_name", "source_class", "site"} <= set(df.columns)
        assert a.report(Options())["totals"]["calls"] == 256
        assert a.by_group("class", Options())["calls"].sum() == 256
    finally:
        a.close()
