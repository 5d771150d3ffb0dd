"""Outputs people load and read (issue 14, issue 19 output fidelity): CSV is one table with the JSON's names
and raw numbers, output files get normal permissions, tables fit the width with ellipses and no trailing
blanks, names keep their bytes on stdout, Markdown survives pipes and newlines in names, compare shows deltas."""
import csv
import io
import json
import os
import shutil
import sqlite3

import pytest

from conftest import H200, SWEEP_TRACES, run_cli

BEFORE, AFTER = H200 / "qwen3vl-before.sqlite", H200 / "qwen3vl-after.sqlite"


@pytest.mark.parametrize("by", ["kind", "site", "class", "nvtx", "stream", "api"])
def test_csv_is_one_table_with_the_json_names_and_raw_numbers(by):
    r = run_cli("analyze", BEFORE, AFTER, "--by", by, "--format", "csv")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    doc = json.loads(run_cli("analyze", BEFORE, AFTER, "--format", "json").stdout)["reports"]
    want = [{"path": rep["path"], **row} for rep in doc for row in rep[f"by_{by}"]]
    assert len(rows) == len(want) and rows
    assert list(rows[0]) == list(want[0])          # the same names, in the JSON's order, path first
    for got, exp in zip(rows, want):
        for k, v in exp.items():
            assert got[k] == ("" if v is None else str(v)), (k, got[k], v)   # raw: 13155629, not "13.16 ms"


def test_output_files_get_normal_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        out = tmp_path / "r.csv"
        assert run_cli("analyze", BEFORE, "--format", "csv", "-o", out).returncode == 0
        assert oct(out.stat().st_mode & 0o777) == "0o644"
        out.chmod(0o640)                                   # an existing file keeps its own mode
        assert run_cli("analyze", BEFORE, "--format", "csv", "-o", out).returncode == 0
        assert oct(out.stat().st_mode & 0o777) == "0o640"
    finally:
        os.umask(old)


def renamed_copy(tmp_path, name):
    """The 2025.3 sweep with the name of its first NVTX range holding a copy replaced."""
    p = tmp_path / "t.sqlite"
    shutil.copy(SWEEP_TRACES["2025.3"], p)
    con = sqlite3.connect(p)
    con.execute("UPDATE NVTX_EVENTS SET text = ? WHERE text LIKE 'pageable:16777216%'", (name,))
    con.execute("UPDATE StringIds SET value = ? WHERE value LIKE 'pageable:16777216%'", (name,))
    con.commit()
    con.close()
    return p


def test_tables_fit_the_width_cut_names_with_an_ellipsis_and_keep_numbers(tmp_path):
    long = "a-very-long-nvtx-range-name-" * 6                          # 168 characters
    p = renamed_copy(tmp_path, long)
    r = run_cli("analyze", p, "--by", "nvtx", env={"COLUMNS": "100"})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert max(len(ln) for ln in lines) <= 100
    assert not [ln for ln in lines if ln != ln.rstrip()]               # no trailing blanks when piped
    row = next(ln for ln in lines if ln.lstrip().startswith("a-very-long"))
    assert "…" in row and long not in row
    ms = json.loads(run_cli("analyze", p, "--by", "nvtx", "--format", "json").stdout)["reports"][0]
    ours = next(g for g in ms["by_nvtx"] if g["group"] == long)
    from nsysh2d.units import format_ns
    assert format_ns(ours["long_ns"]) in row                            # the number itself is never cut
    # An unusable $COLUMNS is ignored (the default width), not a stop (issue 54)
    bad = run_cli("analyze", p, env={"COLUMNS": "wide"})
    assert bad.returncode == 0 and bad.stderr == "" and bad.stdout == run_cli("analyze", p).stdout


def test_names_are_shown_escaped_the_same_on_stdout_and_in_files_and_markdown_survives_them(tmp_path):
    """A name's escape sequences and line breaks are shown as visible escapes (present/safe.py), the
    same on stdout as in -o; JSON keeps the name exactly (test_hostile_strings.py)."""
    name = "step \x1b[31mred\x1b[0m | piped\nsecond line"
    p = renamed_copy(tmp_path, name)
    out = tmp_path / "o.csv"
    assert run_cli("analyze", p, "--by", "nvtx", "--format", "csv", "-o", out).returncode == 0
    stdout = run_cli("analyze", p, "--by", "nvtx", "--format", "csv").stdout
    assert stdout == out.read_text() and "\x1b" not in stdout and "step \\x1b[31mred\\x1b[0m | piped\\nsecond line" in stdout
    md = run_cli("analyze", p, "--by", "nvtx", "--format", "markdown").stdout
    row = next(ln for ln in md.splitlines() if "piped" in ln)
    # Markdown shows the visible escape \n: its backslash is escaped too
    assert "\\| piped\\\\nsecond line" in row and row.startswith("| ") and row.endswith(" |")
    cells = [c for c in row.replace("\\|", "").split("|")]
    header = next(ln for ln in md.splitlines() if ln.startswith("| NVTX range"))
    assert len(cells) == len(header.split("|"))


def test_compare_shows_deltas():
    r = run_cli("compare", BEFORE, AFTER, env={"COLUMNS": "220"})
    assert r.returncode == 0, r.stderr
    doc = json.loads(run_cli("compare", BEFORE, AFTER, "--format", "json").stdout)["compare"]
    from nsysh2d.units import format_ns
    t = doc["totals"]
    d = t["blocking_ns_after"] - t["blocking_ns_before"]
    line = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith("host time blocked (long"))
    assert line.rstrip().endswith(("-" if d < 0 else "+") + format_ns(abs(d)))
    headers = [ln for ln in r.stdout.splitlines() if ln.strip().startswith(("figure", "call site", "source class"))]
    assert len(headers) == 3 and all("delta" in h.split() for h in headers)


@pytest.mark.parametrize("by", ["kind", "api", "site"])
def test_csv_of_a_trace_without_rows_for_the_grouping(by):
    """The public CUDA C export has no async copy (by_kind empty) and, with --direction d2h, nothing either:
    not an internal error; a report without rows keeps one row, its path alone (issue 42: never an empty file),
    under the header a report with rows has (issue 54)."""
    from conftest import THIRDPARTY

    for extra in ([], ["--direction", "d2h", "--calls", "async"]):
        r = run_cli("analyze", THIRDPARTY / "mordred__report1_old.sqlite", "--by", by, "--format", "csv", *extra)
        assert r.returncode == 0, r.stderr
        rows = list(csv.DictReader(io.StringIO(r.stdout)))
        doc = json.loads(run_cli("analyze", THIRDPARTY / "mordred__report1_old.sqlite", "--format", "json",
                                 *extra).stdout)["reports"][0]
        want = doc[f"by_{by}"]
        assert len(rows) == max(1, len(want))
        if not want:
            full = run_cli("analyze", SWEEP_TRACES["2025.3"], "--by", by, "--format", "csv").stdout.splitlines()[0]
            assert rows[0]["path"] == str(THIRDPARTY / "mordred__report1_old.sqlite") and r.stdout.splitlines()[0] == full
            assert not any(v for k, v in rows[0].items() if k != "path")
