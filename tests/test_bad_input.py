"""Bad and odd inputs: one line on stderr, a documented exit code, never a traceback; the input is
left byte-identical and nothing is written beside it."""
import gzip
import lzma
import shutil
import sqlite3

import pytest

from conftest import SWEEP_TRACES, listing, run_cli, sha256

REAL = SWEEP_TRACES["2025.3"]


def check_bad(result, *needles, code=2):
    assert result.exit_code == code, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for n in needles:
        assert n in lines[0]


def copy_db(tmp_path, name="t.sqlite"):
    p = tmp_path / name
    shutil.copyfile(REAL, p)
    return p


def drop_table(path, table):
    con = sqlite3.connect(path)
    con.execute(f"DROP TABLE {table}")
    con.commit()
    con.close()


def test_missing_file(cli, tmp_path):
    check_bad(cli("analyze", tmp_path / "nope.sqlite"), "no such file")


def test_directory(cli, tmp_path):
    check_bad(cli("analyze", tmp_path), "is a directory")


def test_empty_file(cli, tmp_path):
    p = tmp_path / "e.sqlite"
    p.write_bytes(b"")
    check_bad(cli("analyze", p), "empty file")


def test_text_file(cli, tmp_path):
    p = tmp_path / "t.sqlite"
    p.write_text("hello\n")
    check_bad(cli("analyze", p), "not a SQLite file")


@pytest.mark.parametrize("opener,kind", [(gzip.open, "gzip"), (lzma.open, "xz")])
def test_compressed_export(cli, tmp_path, opener, kind):
    p = tmp_path / "t.sqlite.z"
    with opener(p, "wb") as f:
        f.write(REAL.read_bytes())
    check_bad(cli("analyze", p), f"{kind}-compressed")


@pytest.mark.parametrize("fraction", [0.001, 0.3, 0.9])
def test_truncated(cli, tmp_path, fraction):
    p = tmp_path / "t.sqlite"
    data = REAL.read_bytes()
    p.write_bytes(data[: max(100, int(len(data) * fraction))])
    check_bad(cli("analyze", p), "truncated")


def test_sqlite_without_tables(cli, tmp_path):
    p = tmp_path / "empty.sqlite"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE x (a)")
    con.execute("DROP TABLE x")
    con.commit()
    con.close()
    check_bad(cli("analyze", p), "SQLite file without tables")


def test_without_runtime_table_names_the_option(cli, tmp_path):
    p = copy_db(tmp_path)
    drop_table(p, "CUPTI_ACTIVITY_KIND_RUNTIME")
    check_bad(cli("analyze", p), "CUPTI_ACTIVITY_KIND_RUNTIME", "--trace=cuda")


def test_without_string_ids(cli, tmp_path):
    p = copy_db(tmp_path)
    drop_table(p, "StringIds")
    check_bad(cli("analyze", p), "StringIds")


def test_cuda_trace_without_memcpy_is_an_empty_result(cli, tmp_path):
    import json

    p = copy_db(tmp_path)
    drop_table(p, "CUPTI_ACTIVITY_KIND_MEMCPY")
    r = cli("analyze", p, "--format", "json")
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)["reports"][0]
    assert rep["totals"]["calls"] == 0 and rep["by_kind"] == [] and rep["top"] == []
    # Its 256 memcpy API calls are not silently fine: counted, warned about, and the gate cannot pass.
    assert rep["totals"]["calls_without_activity"] == 256
    assert "256 memcpy API calls with no memcpy activity row (not counted)" in rep["warnings"]
    g = cli("gate", p, "--format", "json")
    assert g.exit_code == 1, g.output
    rules = {r["name"]: r for r in json.loads(g.stdout)["verdicts"][0]["rules"]}
    assert not rules["classified-copies"]["passed"] and "256 memcpy API calls without a GPU activity row" in \
        rules["classified-copies"]["message"]


def test_without_mem_kind_enum_warns_and_answers(cli, tmp_path):
    import json

    p = copy_db(tmp_path)
    drop_table(p, "ENUM_CUDA_MEM_KIND")
    r = cli("analyze", p, "--format", "json")
    assert r.exit_code == 0
    rep = json.loads(r.stdout)["reports"][0]
    # Decoded with the ids every ENUM table uses (issue 13), and said once.
    assert {k["src_kind"] for k in rep["by_kind"]} == {"Pageable", "Pinned"}
    assert sum("ENUM_CUDA_MEM_KIND" in w for w in rep["warnings"]) == 1


def test_missing_required_column(cli, tmp_path):
    p = copy_db(tmp_path)
    con = sqlite3.connect(p)
    con.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_MEMCPY DROP COLUMN srcKind")
    con.commit()
    con.close()
    check_bad(cli("analyze", p), "CUPTI_ACTIVITY_KIND_MEMCPY", "srcKind")


def test_nsys_rep_without_nsys(cli, tmp_path, monkeypatch):
    from nsysh2d.capture import nsys as nsysmod

    monkeypatch.setattr(nsysmod, "NSYS_GLOBS", ())  # hide any nsys installed in the usual folders
    p = tmp_path / "r.nsys-rep"
    p.write_bytes(b"\x00\x01binary")
    r = cli("analyze", p, env={"PATH": str(tmp_path), "NSYS": ""})
    check_bad(r, "needs the nsys CLI", code=3)


def test_bad_inputs_leave_files_untouched(tmp_path):
    p = tmp_path / "t.sqlite"
    data = REAL.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    before, files = sha256(p), listing(tmp_path)
    r = run_cli("analyze", p, env={"NSYSH2D_CACHE_DIR": str(tmp_path / "c")})
    assert r.returncode == 2 and r.stderr.startswith("nsysh2d: error:") and "Traceback" not in r.stderr
    assert sha256(p) == before and listing(tmp_path) == files


def test_several_reports_one_bad(cli, tmp_path):
    import json

    bad = tmp_path / "bad.sqlite"
    bad.write_text("x")
    r = cli("analyze", REAL, bad, "--format", "json")
    assert r.exit_code == 2
    doc = json.loads(r.stdout)
    assert len(doc["reports"]) == 1 and doc["errors"][0]["path"] == str(bad)
    r = cli("analyze", REAL, bad)
    assert "INCOMPLETE: 1 of 2 reports" in r.stdout
