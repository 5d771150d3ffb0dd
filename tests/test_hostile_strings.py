"""Names from a trace are untrusted (issue 37, docs/security.md): a real H200 export whose NVTX ranges,
Python file, API names and file name carry hostile strings goes through every command and format, and
no output holds a line a GitHub runner would read as a workflow command, a terminal escape, raw HTML, a
formula cell, or XML/CSV/Markdown that does not parse as what it claims to be."""
import csv
import io
import json
import re
import shutil
import sqlite3
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from conftest import H200

SOURCE = H200 / "api-probe-pybt.sqlite"   # 8 long-blocking pageable copies with Python call sites

HOSTILE = [
    "\n::error file=x.py,line=1::forged",
    "::stop-commands::tok",
    " ##[add-mask]secret",
    "\x1b]0;owned\x07\x1b[2J\x1b[31m",
    "<img src=x onerror=alert(1)>",
    "\n## forged\n**PASS**",
    "=HYPERLINK(\"http://x\",\"y\")",
    "a|b`c*d_e[f](g)",
    "\u202eevil\u2066",
    "\r::warning::cr",
    "\x9b31m\x00\x08",
    "x,y::z%0A",
    "\"'quoted'\"",
    "  ::notice::leading blanks",
    "\u2028::error::sep\u0085::error::nel",
    "+1", "-1", "@SUM(A1)",
]
# Characters a terminal acts on (C0/C1 controls but newline, bidi overrides and isolates).
TERMINAL_UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069]")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A copy of the real export with hostile NVTX names (each range name gets one payload appended, steps
    keep matching ^step), a hostile Python file path and API name, in a file whose name is hostile too."""
    folder = tmp_path_factory.mktemp("hostile")
    name = "t" + "".join(h for h in HOSTILE[:6] if "/" not in h) + ".sqlite"
    path = folder / name
    shutil.copy(SOURCE, path)
    con = sqlite3.connect(path)
    names = [r[0] for r in con.execute("SELECT DISTINCT text FROM NVTX_EVENTS WHERE text IS NOT NULL "
                                       "AND text <> 'Python Backtrace on CUDA' ORDER BY 1")]   # nsys's own marks
    for i, n in enumerate(names):
        con.execute("UPDATE NVTX_EVENTS SET text = ? WHERE text = ?", (n + HOSTILE[i % len(HOSTILE)], n))
    # A path with no line break (one with a line break is never an annotation's file=), but , and :
    con.execute("UPDATE StringIds SET value = ? WHERE value = '/tmp/nsysh2d/src/workloads/api_probe.py'",
                ("/tmp/nsysh2d/src/workloads/" + "".join(h for h in HOSTILE if not re.search("[\n\r\u2028\x85/]", h))
                 + ".py",))
    con.execute("UPDATE StringIds SET value = ? WHERE value = 'cuKernelGetName'", ("".join(HOSTILE),))
    con.commit()
    con.close()
    return path


def runner_commands(text: str) -> list[str]:
    """Lines a GitHub Actions runner would read as a workflow command: `::` after leading blanks, or the
    legacy `##[` anywhere. Split at every line break Python knows (a superset of the runner's)."""
    return [ln for ln in text.splitlines() if ln.strip().startswith("::") or "##[" in ln]


def assert_log_safe(text: str) -> None:
    assert not runner_commands(text), runner_commands(text)[:3]
    assert not TERMINAL_UNSAFE.search(text), repr(TERMINAL_UNSAFE.search(text).group())


def assert_markdown_safe(text: str) -> None:
    assert_log_safe(text)
    assert "<" not in re.sub(r"`[^`\n]*`", "", text), "raw HTML"   # a code span shows < as it is
    lines = text.split("\n")
    assert not [ln for ln in lines if ln.startswith("#") and not ln.startswith(("## ", "### "))]
    assert not [ln for ln in lines if ln.strip() in ("**PASS**", "## forged")]
    # Every table row has as many cells as its header: no name added or closed a cell.
    header_cells = None
    for ln in lines:
        if ln.startswith("|"):
            cells = len(re.findall(r"(?<!\\)\|", ln))
            header_cells = header_cells or cells
            assert cells == header_cells, ln
        else:
            header_cells = None


def assert_csv_safe(text: str) -> None:
    assert_log_safe(text)
    rows = list(csv.reader(io.StringIO(text)))
    assert len(rows) == text.count("\n"), "a cell spans lines"
    for row in rows:
        for c in row:
            if c and c[0] in "=+-@" and not re.fullmatch(r"[-+]?\d+(\.\d+)?(e[-+]?\d+)?", c):
                raise AssertionError(f"formula cell {c!r}")


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)


def assert_html_safe(text: str) -> None:
    assert_log_safe(text)
    p = _Tags()
    p.feed(text)
    assert "img" not in p.tags and "script" not in p.tags


def test_the_fixture_is_hostile_and_still_fails_the_gate(hostile, cli):
    """The edits keep what the gate judges: the same 8 long-blocking copies as the original file, by plain
    SQL over the edited file's NVTX names."""
    con = sqlite3.connect(hostile)
    texts = [r[0] for r in con.execute("SELECT DISTINCT text FROM NVTX_EVENTS WHERE text LIKE 'step %'")]
    assert any("\n::error" in t for t in texts) or any("\x1b" in t for t in texts)
    r = cli("gate", hostile, "--format", "json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 1 and doc["verdicts"][0]["rules"][0]["offenders"]
    assert len(doc["verdicts"][0]["rules"][0]["offenders"]) == 8


@pytest.mark.parametrize("args", [
    ["analyze", "{t}"], ["analyze", "{t}", "--by", "site"], ["analyze", "{t}", "--by", "nvtx"],
    ["analyze", "{t}", "--by", "class"], ["analyze", "{t}", "--by", "stream"], ["analyze", "{t}", "{s}"],
    ["compare", "{s}", "{t}"], ["gate", "{t}"], ["api-summary", "{t}"], ["compare", "{t}", "{t}", "{t}"],
    ["gate", "{t}", "--fail-on-cause", "backlog"],
])
def test_text_outputs_hold_no_runner_command_or_escape(hostile, cli, args):
    r = cli(*[a.format(t=hostile, s=SOURCE) for a in args])
    assert r.exit_code in (0, 1), r.output
    assert_log_safe(r.stdout)
    assert_log_safe(r.stderr)
    assert "\\x1b" in r.stdout or args[0] == "api-summary" or "--by" in args   # shown, escaped


@pytest.mark.parametrize("columns", ["24", "37", "61", "100"])
def test_wrapped_names_never_start_a_line_with_a_command(hostile, cli, columns):
    """A narrow terminal wraps long names between words: a blank before `::` in a name would start a
    line with it (the runner ignores leading blanks)."""
    for args in (["analyze", hostile, "--by", "nvtx"], ["analyze", hostile, "--by", "site"], ["compare", SOURCE, hostile]):
        r = cli(*args, env={"COLUMNS": columns})
        assert r.exit_code == 0, r.output
        assert_log_safe(r.stdout)


@pytest.mark.parametrize("cmd", [["analyze", "{t}"], ["analyze", "{t}", "--by", "nvtx"], ["compare", "{s}", "{t}"],
                                 ["gate", "{t}"], ["api-summary", "{t}"], ["compare", "{t}", "{t}", "{t}"]])
def test_markdown_outputs_are_one_cell_per_name(hostile, cli, cmd):
    r = cli(*[a.format(t=hostile, s=SOURCE) for a in cmd], "--format", "markdown")
    assert r.exit_code in (0, 1), r.output
    assert_markdown_safe(r.stdout)


@pytest.mark.parametrize("cmd", [["analyze", "{t}"], ["analyze", "{t}", "--by", "site"], ["compare", "{s}", "{t}"],
                                 ["api-summary", "{t}"], ["compare", "{t}", "{t}", "{t}"]])
def test_csv_outputs_are_loadable_and_hold_no_formula(hostile, cli, cmd):
    r = cli(*[a.format(t=hostile, s=SOURCE) for a in cmd], "--format", "csv")
    assert r.exit_code == 0, r.output
    assert_csv_safe(r.stdout)


@pytest.mark.parametrize("cmd", [["analyze", "{t}"], ["analyze", "{t}", "--by", "site"], ["compare", "{s}", "{t}"],
                                 ["gate", "{t}"], ["api-summary", "{t}"]])
def test_json_outputs_keep_the_names_exactly(hostile, cli, cmd):
    """JSON is the one output that keeps each name as it is in the trace (escaped as JSON, so the text on a
    log still holds no runner command)."""
    r = cli(*[a.format(t=hostile, s=SOURCE) for a in cmd], "--format", "json")
    assert r.exit_code in (0, 1), r.output
    assert_log_safe(r.stdout)
    found = set(strings(json.loads(r.stdout)))
    assert str(hostile) in found
    if cmd[0] == "api-summary":
        assert "".join(HOSTILE) in found
    else:
        assert any(h in s for s in found if s != str(hostile) for h in HOSTILE[:5])   # NVTX names, exact


def strings(doc):
    if isinstance(doc, str):
        yield doc
    elif isinstance(doc, dict):
        for k, v in doc.items():
            yield k
            yield from strings(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from strings(v)


@pytest.mark.parametrize("cmd", [["analyze", "{t}"], ["compare", "{s}", "{t}"], ["gate", "{t}"]])
def test_html_outputs_hold_no_markup_from_names(hostile, cli, cmd, tmp_path):
    r = cli(*[a.format(t=hostile, s=SOURCE) for a in cmd], "--format", "html")
    assert r.exit_code in (0, 1), r.output
    assert_html_safe(r.stdout)


def test_gate_ci_files_and_annotations(hostile, cli, tmp_path):
    junit, summary = tmp_path / "gate.xml", tmp_path / "summary.md"
    r = cli("gate", hostile, "--junit", junit, "--summary", summary, env={"GITHUB_ACTIONS": "true"})
    assert r.exit_code == 1
    ET.fromstring(junit.read_text(encoding="utf-8"))   # well-formed XML 1.0
    assert_log_safe(junit.read_text(encoding="utf-8"))
    assert_markdown_safe(summary.read_text(encoding="utf-8"))
    annotations = [ln for ln in r.stdout.split("\n") if ln.startswith("::")]
    assert annotations and len(annotations) == len(runner_commands(r.stdout))
    for ln in annotations:
        m = re.fullmatch(r"::error ([^:]*)::(.*)", ln)
        assert m, ln
        props = dict(p.split("=", 1) for p in m.group(1).split(","))
        assert set(props) <= {"file", "line", "title"} and props["title"].startswith("nsysh2d")
        assert "\r" not in ln and not TERMINAL_UNSAFE.search(ln)
    # the offending line's annotation names the hostile file, its , and : escaped as the runner expects
    at_file = [ln for ln in annotations if ln.startswith("::error file=")]
    assert at_file and "%2C" in at_file[0] and "%3A" in at_file[0]
    rest = r.stdout.replace("\n".join(annotations), "")
    assert_log_safe(rest)


def test_gate_json_with_annotations_on_stderr(hostile, cli):
    r = cli("gate", hostile, "--format", "json", env={"GITHUB_ACTIONS": "true"})
    assert r.exit_code == 1
    json.loads(r.stdout)
    assert_log_safe(r.stdout)
    assert all(re.fullmatch(r"::error [^:]*::.*", ln) for ln in r.stderr.splitlines() if ln.strip().startswith("::"))


def test_baseline_and_its_message(hostile, cli, tmp_path):
    out = tmp_path / "b.json"
    r = cli("baseline", hostile, "-o", out)
    assert r.exit_code == 0, r.output
    assert_log_safe(r.stdout)
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc and assert_log_safe(out.read_text(encoding="utf-8")) is None
    g = cli("gate", hostile, "--baseline", out, "--format", "markdown")
    assert g.exit_code == 0   # the trace its own baseline came from: no new site, no growth
    assert_markdown_safe(g.stdout)


def test_error_lines_are_one_safe_line(tmp_path, cli):
    bad = tmp_path / ("x" + "".join(h for h in HOSTILE[:12] if "/" not in h).replace("\x00", "") + ".sqlite")
    bad.write_text("not a trace")
    r = cli("analyze", bad)
    assert r.exit_code == 2
    assert len(r.stderr.strip("\n").split("\n")) == 1
    assert_log_safe(r.stderr)


# threshold reads its cases from NVTX names 'h2d variant=V bytes=N ...' (V: no blank): hostile variants
SWEEP_VARIANTS = {"pinned_contig": "::error::forged", "pageable": "##[add-mask]s\x1b]0;t\x07",
                  "numpy_from": "<img/src=x/onerror=alert(1)>", "numpy_pin": "=HYPERLINK(1)|`*_\u202eevil",
                  "pinned_strided": "$x$\x9b31m", "pinned_rows": "-1"}


@pytest.fixture(scope="module")
def hostile_sweep(tmp_path_factory):
    path = tmp_path_factory.mktemp("sweep") / "sweep.sqlite"
    shutil.copy(H200 / "h2d-sweep.sqlite", path)
    con = sqlite3.connect(path)
    for old, new in SWEEP_VARIANTS.items():
        con.execute("UPDATE NVTX_EVENTS SET text = replace(text, ?, ?) WHERE text LIKE ?",
                    (f"variant={old} ", f"variant={new} ", f"h2d variant={old} %"))
    con.commit()
    con.close()
    return path


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json", "html"])
def test_threshold_outputs(hostile_sweep, cli, fmt):
    r = cli("threshold", hostile_sweep, "--format", fmt)
    assert r.exit_code == 0, r.output
    {"table": assert_log_safe, "markdown": assert_markdown_safe, "csv": assert_csv_safe, "json": assert_log_safe,
     "html": assert_html_safe}[fmt](r.stdout)
    if fmt == "json":
        assert set(SWEEP_VARIANTS.values()) <= set(strings(json.loads(r.stdout)))
