"""Issue 54, classes 4, 5 (settings, baselines, nsys exports) and 9: hostile values are refused in one line
(exit 2) or judged, never a hang, a traceback or exit 70. Each input is a copy of a bundled real export edited
with sqlite3, or a pyproject/baseline in tmp_path; every run is a subprocess under an address-space limit with
a timeout that guards against a hang (not a timing assertion); counts are checked against plain SQL."""
import json
import os
import resource
import shutil
import sqlite3
import subprocess

import pytest

from conftest import H200, cli_command, edited_copy, sha256

PROBE = H200 / "api-probe.sqlite"       # 12 async H2D copy calls, 8 of them long, 24 "step N" ranges
QWEN = H200 / "qwen3vl-before.sqlite"   # 8 "step N" ranges with NVTX ranges nested inside them
HANG_GUARD_S = 180


def _limit():
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def run(*args, env=None, cwd=None):
    """The CLI as a user runs it, under 3 GiB of address space; bytes out, so a lone surrogate cannot hide."""
    r = subprocess.run(cli_command() + [str(a) for a in args], capture_output=True, timeout=HANG_GUARD_S,
                       env={**os.environ, **(env or {})}, cwd=cwd, preexec_fn=_limit)
    r.out, r.err = r.stdout.decode("utf-8"), r.stderr.decode("utf-8")   # strict: outputs are valid UTF-8
    return r


def one_error_line(r, *words):
    lines = r.err.strip().splitlines()
    assert r.returncode == 2, (r.returncode, r.err[-2000:])
    assert len(lines) == 1 and lines[0].startswith("nsysh2d: error: "), r.err[-2000:]
    assert "Traceback" not in r.err and "internal error" not in r.err
    for w in words:
        assert w.lower() in lines[0].lower(), (w, lines[0])
    return lines[0]


def sql(path, query, *params):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute(query, params).fetchone()
    finally:
        con.close()


# The async H2D copy calls by plain SQL: their count and how many last 100 us or more.
ASYNC_H2D = """SELECT count(DISTINCT r.correlationId), count(DISTINCT r.correlationId) FILTER (WHERE r."end" - r.start >= 100000)
FROM CUPTI_ACTIVITY_KIND_RUNTIME r
JOIN (SELECT DISTINCT id, value FROM StringIds) s ON s.id = r.nameId AND s.value LIKE '%emcpy%Async%'
JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = r.correlationId AND m.copyKind = 1"""


def totals(path):
    r = run("analyze", path, "--format", "json", "--no-cache")
    assert r.returncode == 0, r.err
    return json.loads(r.out)["reports"][0]["totals"]


# ------------------------------------------------------------------------------ class 4: patterns
def backtracking_trace(tmp_path):
    """Step 0 is renamed 'aaaa' (the pattern matches it: the gate judges steps); step 4 becomes 40 a's and a
    '!', on which `^(a+)+$` backtracks 2^40 times in Python's re (main hung here: the gate listed the calls of
    steps by matching the pattern on their NVTX paths in Python)."""
    return edited_copy(QWEN, tmp_path / "hostile.sqlite",
                       "UPDATE NVTX_EVENTS SET text = 'aaaa' WHERE text = 'step 0'",
                       f"UPDATE NVTX_EVENTS SET text = '{'a' * 40}!' WHERE text = 'step 4'")


def test_a_backtracking_step_pattern_on_a_crafted_name_gets_a_verdict(tmp_path):
    p = backtracking_trace(tmp_path)
    assert sql(p, "SELECT count(*) FROM NVTX_EVENTS WHERE text = ?", "a" * 40 + "!") == (1,)
    r = run("gate", p, "--step-pattern", "^(a+)+$", "--no-cache")
    assert r.returncode == 1 and r.err == "" and "[FAIL] max-long-calls" in r.out, r.err
    assert "judged: " in r.out   # a verdict: the one crafted step range, or the whole run when it holds too few copies
    # from the checkout's pyproject too (the pull request's own file)
    (tmp_path / "pyproject.toml").write_text('[tool.nsysh2d.gate]\nstep-pattern = "^(a+)+$"\n')
    r2 = run("gate", p, "--config", tmp_path / "pyproject.toml", "--no-cache")
    assert r2.returncode == 1 and r2.out == r.out


def test_the_calls_the_gate_lists_are_the_ones_it_counts(tmp_path):
    """The listed calls carry their step from the trace (top.sql), warm-up applied: with one warm-up step of
    qwen3vl's eight, the two long-blocking copies of step 0 are neither counted nor listed."""
    r = run("gate", QWEN, "--warmup-steps", "1", "--format", "json")
    rule = json.loads(r.out)["verdicts"][0]["rules"][0]
    assert rule["name"] == "max-long-calls" and "2 long-blocking" in rule["message"]
    assert len(rule["offenders"]) == 2 and all(o["step"] >= 1 for o in rule["offenders"])


@pytest.mark.parametrize("pattern", ["(?<=a)b", r"(a)\1", "(?=step)", "(", "x" * 1001, "step\x1b[31m"])
def test_patterns_re2_cannot_take_are_refused_in_one_line(tmp_path, pattern):
    r = run("gate", PROBE, "--step-pattern", pattern, "--no-cache")
    one_error_line(r, "--step-pattern")


# ------------------------------------------------------------------------------ class 5: settings
@pytest.mark.parametrize("text,words", [
    ("kinds = " + "[" * 5000 + "]" * 5000, "nested too deeply"),
    ("kinds = " + "{a=" * 5000 + "1" + "}" * 5000, "nested too deeply"),
    ("max-long-calls = " + "9" * 5000, "digits"),
    ("max-long-calls = " + "9" * 4000, "max-long-calls"),
    ("warmup-steps = " + "9" * 4000, "warmup-steps"),
    ('min-duration = "' + "9" * 5000 + 'ns"', "min-duration"),
    ('max-blocked-per-step = "' + "9" * 400 + 'ms"', "max-blocked-per-step"),
    ("max-long-calls = inf", "max-long-calls"),
    ("max-long-calls = nan", "max-long-calls"),
    ("warmup-steps = inf", "warmup-steps"),
    ("warmup-steps = -inf", "warmup-steps"),
    ("warmup-steps = 1.5", "warmup-steps"),
    ("warmup-steps = -3", "warmup-steps"),
    ("min-duration = inf", "min-duration"),
    ("min-duration = nan", "min-duration"),
    ("tolerance = nan", "tolerance"),
    ("tolerance = inf", "tolerance"),
    ('tolerance = "inf%"', "tolerance"),
    ("step-pattern = nan", "step-pattern"),
    ("direction = " + "9" * 4000, "direction"),
])
def test_hostile_pyproject_values_are_one_line(tmp_path, text, words):
    conf = tmp_path / "pyproject.toml"
    conf.write_text("[tool.nsysh2d.gate]\n" + text + "\n")
    line = one_error_line(run("gate", PROBE, "--config", conf), words)
    assert str(conf) in line and len(line) < 600


def test_lone_surrogates_in_pyproject_are_one_line(tmp_path):
    conf = tmp_path / "pyproject.toml"
    conf.write_bytes(b'[tool.nsysh2d.gate]\nstep-pattern = "\xed\xa0\x80"\n')   # a surrogate, UTF-8 encoded
    one_error_line(run("gate", PROBE, "--config", conf), str(conf))


# ------------------------------------------------------------------------------ class 5: baselines
@pytest.fixture(scope="module")
def baseline_doc(tmp_path_factory):
    out = tmp_path_factory.mktemp("base") / "base.json"
    r = run("baseline", PROBE, "-o", out)
    assert r.returncode == 0, r.err
    return json.loads(out.read_text())


def _edited_baseline(doc, value):
    doc = json.loads(json.dumps(doc))
    for key in ("by_site", "by_class", "by_nvtx", "by_kind"):
        for row in doc[key]:
            row["blocking_ns"] = value
    return doc


def test_a_baseline_growth_rule_is_live(tmp_path, baseline_doc):
    """The control: a baseline accepting 1 ns of blocking copy time fails no-growth on its own trace."""
    base = tmp_path / "b.json"
    base.write_text(json.dumps(_edited_baseline(baseline_doc, 1)))
    r = run("gate", PROBE, "--baseline", base, "--format", "json")
    rules = {x["name"]: x["passed"] for x in json.loads(r.out)["verdicts"][0]["rules"]}
    assert r.returncode == 1 and rules["no-growth"] is False


@pytest.mark.parametrize("literal,words", [("NaN", "NaN"), ("Infinity", "Infinity"), ("-Infinity", "Infinity"),
                                           ("1e400", "blocking_ns"), ("9" * 4000, "4000 digits"),
                                           ("-" + "9" * 30, "digits"), ("1e19", "blocking_ns")])
def test_a_baseline_number_that_is_no_number_is_refused(tmp_path, baseline_doc, literal, words):
    """A NaN baseline switched the growth rule off (NaN compares false): it is refused, never compared."""
    base = tmp_path / "b.json"
    base.write_text(json.dumps(_edited_baseline(baseline_doc, 12345)).replace("12345", literal))
    line = one_error_line(run("gate", PROBE, "--baseline", base), str(base), words)
    assert len(line) < 400


@pytest.mark.parametrize("where", ["row", "steps"])
def test_a_deeply_nested_or_huge_baseline_is_one_line(tmp_path, baseline_doc, where):
    base = tmp_path / "b.json"
    if where == "row":
        text = json.dumps(baseline_doc)[:-1] + ', "extra": ' + "[" * 100_000 + "]" * 100_000 + "}"
        words = "nested too deeply"
    else:
        text = json.dumps(baseline_doc).replace('"steps": 24', '"steps": ' + "7" * 3000)
        words = "digits"
    base.write_text(text)
    one_error_line(run("gate", PROBE, "--baseline", base), str(base), words)


def test_lone_surrogates_in_baseline_names_are_shown_safely(tmp_path, baseline_doc):
    doc = json.loads(json.dumps(baseline_doc))
    for key in ("by_site", "by_class", "by_nvtx"):
        for row in doc[key]:
            row["group"] += "\ud800"
    doc["accepted"] = "reviewed \udc00 \x1b[31m"
    base = tmp_path / "b.json"
    base.write_text(json.dumps(doc))   # \ud800 escapes, as JSON writes a lone surrogate
    for fmt in ("table", "json", "markdown"):
        r = run("gate", PROBE, "--baseline", base, "--format", fmt)
        assert r.returncode == 1 and "Traceback" not in r.err and "\x1b" not in r.out   # judged, decodable
        assert "\\udc00" in r.out or "\\\\udc00" in r.out


# ------------------------------------------------------------------------------ class 5: NVTX text and nesting
@pytest.mark.parametrize("value,words", [
    ("CAST(X'6869eda080' AS TEXT)", ["NVTX_EVENTS", "text", "unicode"]),    # 'hi' and a UTF-8 encoded surrogate
    ("X'6869ff00'", ["NVTX_EVENTS", '"text"', "blob"]),                      # a BLOB DuckDB's message cannot decode
    ("X'00ff41'", ["NVTX_EVENTS", '"text"', "blob"]),
])
@pytest.mark.parametrize("command", ["analyze", "gate", "compare"])
def test_nvtx_text_that_is_not_utf8_is_one_line(tmp_path, value, words, command):
    (tmp_path / "in").mkdir()
    p = edited_copy(QWEN, tmp_path / "in" / "t.sqlite", f"UPDATE NVTX_EVENTS SET text = {value} WHERE text = 'mrope_copy'")
    before, files = sha256(p), sorted(os.listdir(p.parent))
    args = [QWEN, p] if command == "compare" else [p]
    one_error_line(run(command, *args, "--no-cache"), str(p), *words)
    assert sha256(p) == before and sorted(os.listdir(p.parent)) == files


def test_ranges_nested_ten_thousand_deep_are_judged(tmp_path):
    """10,000 push/pop ranges around the whole run, one inside the other (their paths grew with the square of the
    depth: DuckDB ran out of memory, exit 70): the verdict and the counts are plain SQL's."""
    p = tmp_path / "deep.sqlite"
    shutil.copy(QWEN, p)
    con = sqlite3.connect(p)
    lo, hi, tid = con.execute("SELECT min(start), max(\"end\"), globalTid FROM NVTX_EVENTS "
                              "WHERE eventType = 59 AND text LIKE 'step %'").fetchone()
    depth = 10_000
    con.executemany("INSERT INTO NVTX_EVENTS (start, \"end\", eventType, text, globalTid) VALUES (?, ?, 59, ?, ?)",
                    [(lo - depth + i, hi + depth - i, f"level {i} " + "x" * 200, tid) for i in range(depth)])
    con.commit()
    con.close()
    calls, long_calls = sql(p, ASYNC_H2D)
    t = totals(p)
    assert (t["calls"], t["long_calls"]) == (calls, long_calls) and long_calls > 0
    r = run("gate", p, "--no-cache")
    assert r.returncode == 1 and "judged: copies during 8 of 8 step ranges" in r.out, r.err
    assert "[FAIL] max-long-calls: 4 long-blocking" in r.out and "(NVTX … > mrope_copy)" in r.out


# ------------------------------------------------------------------------------ class 9
@pytest.mark.parametrize("end", [2 ** 63 - 1, 2 ** 63 - 1000, 2 ** 62])
def test_calls_ending_near_2_63_are_counted_and_fail_the_gate(tmp_path, end):
    """Three long async copy calls end near 2^63 ns (their start is normal). Plain SQL counts them: the report
    counts them as calls of unusable time (left out of the figures: no duration to add) and the gate fails
    naming them."""
    p = edited_copy(PROBE, tmp_path / "t.sqlite", f"""UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET "end" = {end} WHERE rowid IN (
        SELECT r.rowid FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
        WHERE s.value LIKE 'cudaMemcpyAsync%' AND r."end" - r.start >= 100000 LIMIT 3)""")
    calls, _ = sql(p, ASYNC_H2D)
    t = totals(p)
    assert t["unusable_time_calls"] == 3 and t["calls"] + t["unusable_time_calls"] == calls == 12
    r = run("gate", p, "--no-cache")
    assert r.returncode == 1 and "[FAIL] classified-copies: 3 copy calls with an unusable host start/end" in r.out


@pytest.mark.parametrize("edit", [
    """UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET "end" = 4611686018427387903 WHERE rowid IN (
        SELECT r.rowid FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
        WHERE s.value LIKE 'cudaMemcpyAsync%' LIMIT 3)""",
    "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = 9223372036854775807 WHERE rowid IN "
    "(SELECT rowid FROM CUPTI_ACTIVITY_KIND_MEMCPY LIMIT 3)"])
def test_values_whose_sums_overflow_are_one_line(tmp_path, edit):
    """Each value fits (an end of 2^62 - 1, the largest time kept; bytes of 2^63 - 1); their sums do not."""
    p = edited_copy(PROBE, tmp_path / "t.sqlite", edit)
    for command in ("analyze", "gate"):
        one_error_line(run(command, p, "--no-cache"), str(p), "add up beyond 64-bit integers")


@pytest.mark.parametrize("table,column,value", [
    ("CUPTI_ACTIVITY_KIND_MEMCPY", "bytes", "'lots'"), ("CUPTI_ACTIVITY_KIND_MEMCPY", "srcKind", "'pageable'"),
    ("CUPTI_ACTIVITY_KIND_MEMCPY", "bytes", "'" + "9" * 3000 + "'"),   # TEXT where a number is expected
    ("NVTX_EVENTS", "start", "'abc'"), ("NVTX_EVENTS", "globalTid", "X'01'"), ("NVTX_EVENTS", "end", "1.5"),
])
def test_a_type_error_names_its_table(tmp_path, table, column, value):
    p = edited_copy(QWEN, tmp_path / "t.sqlite",
                    f'UPDATE {table} SET "{column}" = {value} WHERE rowid IN (SELECT rowid FROM {table} '
                    f"WHERE eventType = 59 LIMIT 2)" if table == "NVTX_EVENTS" else
                    f'UPDATE {table} SET "{column}" = {value} WHERE rowid IN (SELECT rowid FROM {table} LIMIT 2)')
    for command in ("analyze", "gate"):
        one_error_line(run(command, p, "--no-cache"), str(p), table, f'"{column}"')


@pytest.mark.parametrize("columns", ["abc", "-5", "99999999", "0", "", "1e3"])
def test_an_unusable_columns_falls_back_to_the_default_width(columns):
    r = run("analyze", PROBE, env={"COLUMNS": columns})
    assert r.returncode == 0 and r.err == "" and r.out == run("analyze", PROBE, env={"COLUMNS": "160"}).out


@pytest.mark.parametrize("args", [["--by", "kind"], ["--by", "site"], ["--by", "nvtx"], ["--by", "api"],
                                  ["--csv-table", "calls"]])
def test_the_csv_of_a_trace_without_copies_has_the_full_header(tmp_path, args):
    p = edited_copy(PROBE, tmp_path / "empty.sqlite", "DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY")
    assert sql(p, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY") == (0,)
    full = run("analyze", PROBE, "--format", "csv", *args)
    empty = run("analyze", p, "--format", "csv", "--no-cache", *args)
    assert full.returncode == empty.returncode == 0, empty.err
    assert empty.out.splitlines()[0] == full.out.splitlines()[0]
    assert empty.out.splitlines()[1:] == [str(p) + "," * full.out.splitlines()[0].count(",")]
