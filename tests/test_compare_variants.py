"""Issue 43: `compare` of three variants side by side (before, after, uva), each figure equal to plain SQL over the
NVTX ranges of its trace, then the first trace against each other one."""
import json
import sqlite3
import statistics

from conftest import AFTER, BEFORE, DATA, run_cli

UVA = DATA / "h100" / "qwen3vl-uva.sqlite"


def range_walls(path, name=None):
    """Wall time (ns) of each NVTX push/pop range named `name` (None: the step ranges, 'step N'), plain SQL."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = con.execute("""SELECT COALESCE(n.text, s.value), n."end" - n.start FROM NVTX_EVENTS n
                          LEFT JOIN StringIds s ON s.id = n.textId WHERE n.eventType = 59 AND n."end" IS NOT NULL""")
    return [d for t, d in rows if (t == name if name else (t or "").startswith("step "))]


def test_three_variants_side_by_side_equal_plain_sql(tmp_path):
    paths = [BEFORE, AFTER, UVA]
    r = run_cli("compare", *paths, "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)["compare"]
    assert [t["path"] for t in doc["traces"]] == [str(p) for p in paths]
    fig = {row["figure"]: row["values"] for row in doc["side_by_side"]}
    for i, p in enumerate(paths):
        steps = range_walls(p)
        assert fig["steps: count"][i] == len(steps) == 8
        assert fig["steps: wall p50"][i] == statistics.median(steps)
        for name in ("mrope_copy", "vision_pos_ids"):
            walls = range_walls(p, name)
            assert fig[f"range {name}: count"][i] == len(walls)
            assert fig[f"range {name}: wall p50"][i] == statistics.median(walls)
        rep = json.loads(run_cli("analyze", p, "--format", "json").stdout)["reports"][0]
        assert fig["long copy calls"][i] == rep["totals"]["long_calls"]
        assert fig["blocking copy calls"][i] == rep["totals"]["blocking_calls"]
    # the uva variant makes no copy at the M-RoPE site: its range is the shortest of the three
    p50 = fig["range mrope_copy: wall p50"]
    assert p50[2] < p50[1] < p50[0]
    assert fig["blocking copy calls"] == [4, 0, 0]
    # then before -> after and before -> uva, as two-trace compares
    assert len(doc["pairs"]) == 2 and doc["pairs"][1]["after"]["path"] == str(UVA)
    two = json.loads(run_cli("compare", BEFORE, UVA, "--format", "json").stdout)["compare"]
    assert two == doc["pairs"][1]
    text = run_cli("compare", *paths).stdout
    assert text.startswith("variants side by side") and f"{BEFORE}  ->  {UVA}" in text
    assert f"3 = {UVA}" in " ".join(text.split())   # the legend wraps at the terminal's width
    csv = run_cli("compare", *paths, "--format", "csv").stdout.splitlines()
    assert csv[0] == "figure,unit,1,2,3" and any(line.startswith("steps: wall p50,ns,") for line in csv)


def test_compare_needs_two_traces_and_html_takes_two():
    r = run_cli("compare", BEFORE)
    assert r.returncode == 2 and "needs two traces" in r.stderr and r.stderr.count("\n") == 1
    r = run_cli("compare", BEFORE, AFTER, UVA, "--format", "html")
    assert r.returncode == 2 and "--format html compares two traces" in r.stderr
