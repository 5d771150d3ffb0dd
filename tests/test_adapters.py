"""The input adapters (source/inputs.py, issue 55 part 2): each bundled trace gets the adapter of its content, the one
opener closes what it opened, and what the cache and a folder's expansion ask of an input's format. Truth is the
files' own bytes (SQLite's header, the JSON), read here with the standard library."""
import gzip
import json
import os
import shutil
import sqlite3

import duckdb
import pytest

from conftest import DATA, THIRDPARTY
from nsysh2d.errors import BadInput
from nsysh2d.model import open_model
from nsysh2d.source import inputs, open_input
from nsysh2d.source.files import expand_inputs
from nsysh2d.runner import jobs

PROBE = DATA / "h200" / "api-probe.sqlite"
KINETO = DATA / "kineto" / "api-probe.pt.trace.json.gz"
RESNET_2021 = THIRDPARTY / "kineto-tb-plugin__resnet50_num_workers_0__worker0.1623143566756.pt.trace.json.gz"


def is_json_object(path) -> bool:
    """The whole text is braced: starts with '{' and ends with '}' (a full parse of every bundled trace took 16 s)."""
    raw = path.read_bytes()
    text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).strip(b" \t\r\n\xef\xbb\xbf")
    return text[:1] == b"{" and text[-1:] == b"}"


def test_every_bundled_trace_gets_the_adapter_of_its_content():
    traces = sorted(p for p in DATA.rglob("*") if p.name.endswith((".sqlite", ".json", ".json.gz")))
    assert len(traces) > 40
    for p in traces:
        sqlite_file = open(p, "rb").read(16) == b"SQLite format 3\x00"
        want = inputs.NsysSqlite if sqlite_file else inputs.KinetoJson if is_json_object(p) else inputs.NsysSqlite
        assert type(inputs.input_for(str(p))) is want, p


def test_content_decides_before_the_name(tmp_path):
    json_named_rep = tmp_path / "trace.nsys-rep"
    shutil.copy(KINETO, json_named_rep)
    sqlite_named_json = tmp_path / "export.json"
    shutil.copy(PROBE, sqlite_named_json)
    report = tmp_path / "run.qdrep"
    report.write_bytes(b"NVIDIA Tegra Profiler Report 2023@4@4@54-234433681190v0.")
    assert type(inputs.input_for(str(json_named_rep))) is inputs.KinetoJson
    assert type(inputs.input_for(str(sqlite_named_json))) is inputs.NsysSqlite
    assert type(inputs.input_for(str(report))) is inputs.NsysRep
    assert type(inputs.input_for(str(tmp_path / "missing.sqlite"))) is inputs.NsysSqlite   # its open says so
    with open_input(str(sqlite_named_json)) as t:
        assert (t.format, t.meta["format"]) == ("nsys-sqlite", "nsys-sqlite")


def test_what_each_format_needs():
    assert (inputs.NsysSqlite.cacheable, inputs.NsysRep.cacheable, inputs.KinetoJson.cacheable) == (True, False, True)
    assert [c.uses_source_root for c in (inputs.NsysSqlite, inputs.NsysRep, inputs.KinetoJson)] == [False, False, True]
    assert [c.sites_at_def for c in (inputs.NsysSqlite, inputs.KinetoJson, inputs.KinetoLegacy)] == [False, True, False]
    assert inputs.named("kineto") is inputs.KinetoJson and inputs.named(None) is inputs.NsysSqlite


def test_the_2021_layout_is_known_once_read():
    text = gzip.decompress(RESNET_2021.read_bytes())
    # the ops carry their Python stacks, and no python_function events: the layout whose sites are call lines
    assert b'"Call stack"' in text and b'"python_function"' not in text
    with open_input(str(RESNET_2021), use_cache=False) as t:
        assert type(t.input) is inputs.KinetoLegacy and t.format == "kineto" and t.meta["call_lines"]
    with open_input(str(KINETO), use_cache=False) as t:
        assert type(t.input) is inputs.KinetoJson and not t.meta["call_lines"]


def test_the_one_opener_closes_what_it_opened():
    with open_input(str(PROBE)) as t:
        spill = t.spill
        assert t.con.execute("SELECT count(*) FROM n.runtime").fetchone()[0] > 0
    assert not os.path.exists(spill)
    with pytest.raises(duckdb.ConnectionException):
        t.con.execute("SELECT 1")
    with pytest.raises(KeyError), open_input(str(KINETO), use_cache=False) as t:
        spill = t.spill
        raise KeyError("a bug in an analysis")
    assert not os.path.exists(spill)
    with open_model(str(PROBE)) as m:   # the model's opener is the same one
        con = sqlite3.connect(f"file:{PROBE}?mode=ro", uri=True)
        want = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY").fetchone()[0]
        con.close()
        assert m.trace.con.execute("SELECT count(*) FROM copies_x WHERE copy_kind IS NOT NULL").fetchone()[0] == want
    with pytest.raises(duckdb.ConnectionException):
        m.trace.con.execute("SELECT 1")


def test_damage_met_inside_the_opener_is_one_line_of_bad_input(tmp_path):
    with pytest.raises(BadInput, match="damaged or not as nsys writes it"), open_input(str(PROBE)):
        raise duckdb.ConversionException("Conversion Error: Could not convert string 'x' to INT64")


def test_a_gzip_trace_damaged_early_is_named_as_damaged(tmp_path, cli):
    """The first 50 KB of a bundled trace: its text ends within the first MiB. The format is decided on its first
    4 KiB, so the reader names the damage (it was called 'gzip-compressed; decompress it first' before)."""
    cut = tmp_path / "cut.pt.trace.json.gz"
    cut.write_bytes(KINETO.read_bytes()[:50_000])
    with pytest.raises(EOFError):
        gzip.decompress(cut.read_bytes())
    r = cli("analyze", cut)
    assert r.exit_code == 2 and "damaged or truncated gzip stream" in r.output and "decompress it first" not in r.output


def test_the_report_cache_asks_the_adapter(tmp_path, monkeypatch):
    """A Kineto trace's sites are resolved against the source root: part of its cached report's key; an export's
    are not. A .nsys-rep's reports are not cached (its export is)."""
    keys = {}
    for root in ("/a", "/b"):
        monkeypatch.setenv("NSYSH2D_SOURCE_ROOT", root)
        keys[root] = (jobs.entry_path(jobs.Job(str(KINETO))), jobs.entry_path(jobs.Job(str(PROBE))))
    assert keys["/a"][0] != keys["/b"][0] and keys["/a"][1] == keys["/b"][1]
    rep = tmp_path / "x.nsys-rep"
    rep.write_bytes(b"not a report")
    computed = []
    assert jobs.cached(jobs.Job(str(rep)), lambda: computed.append(1) or "fresh") == "fresh"
    assert computed == [1]


def test_a_folder_stands_for_its_traces(tmp_path):
    shutil.copy(PROBE, tmp_path / "rank10.sqlite")
    shutil.copy(PROBE, tmp_path / "rank2.sqlite")
    shutil.copy(KINETO, tmp_path / "rank3.json.gz")
    (tmp_path / "settings.json").write_text(json.dumps({"not": "a trace"}))
    (tmp_path / "notes.txt").write_text("x")
    assert expand_inputs([str(tmp_path)]) == [str(tmp_path / n) for n in ("rank2.sqlite", "rank3.json.gz",
                                                                           "rank10.sqlite")]
