"""Issue 58 on a GPU: call sites and source classes from the copy hook, captured on a lent H100 (2026-12-07,
tests/data/h100/sites/README.md), equal those of the sampled capture, with plain SQL / JSON arithmetic as truth.

- qwen3vl-{before,after}-sampled, train-loop-{before,after}-sampled: ONE run each captured with the hook AND Python/CUDA
  backtraces (--python-backtrace). Two
  copies of it, one with the hook's ranges deleted (what sampling alone tells) and one with the backtraces deleted
  (what the hook alone tells), give every copy call the same site line and class.
- qwen3vl-{before,after}-sites: the cheap default capture (no sampling) with the hook: per class and call line the
  report's counts equal plain SQL's join of the hook's ranges with the copy calls, and each variant's call lines
  are those of its sampled run.
- outside-torch: copies made by CuPy and through ctypes next to PyTorch's: no site, and the fix says why.
- train-kineto-before: torch.profiler with the hook: the call lines (not the def line) from JSON arithmetic."""
import gzip
import json
import lzma
import shutil
import sqlite3
from collections import Counter

import pytest

from conftest import DATA, edited_copy

SITES = DATA / "h100" / "sites"
COPY_CALLS = """SELECT r.correlationId, r.start, r."end", r.globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME r
                JOIN StringIds s ON s.id = r.nameId JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = r.correlationId
                WHERE s.value LIKE 'cudaMemcpy%' AND m.copyKind = 1
                  AND r.eventClass = (SELECT id FROM ENUM_NSYS_EVENT_CLASS WHERE label = 'CUDA runtime')"""
# Each copy call's enclosing hook range, by plain SQL (the truth the report must equal).
HOOK_OF_CALL = f"""WITH c AS ({COPY_CALLS})
    SELECT c.correlationId, c.start, COALESCE(e.text, s.value) FROM c
    JOIN NVTX_EVENTS e ON e.globalTid = c.globalTid AND e.start <= c.start AND e."end" >= c."end"
    LEFT JOIN StringIds s ON s.id = e.textId
    WHERE COALESCE(e.text, s.value) LIKE 'nsysh2d.h2d %'"""


def unxz(name, folder):
    out = folder / name.removesuffix(".xz")
    with lzma.open(SITES / name) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sites")
    return {p.name.removesuffix(".sqlite.xz"): unxz(p.name, folder) for p in SITES.glob("*.sqlite.xz")}


def report(cli, path, *args):
    r = cli("analyze", path, "--format", "json", "--min-duration", "0", "--top", "100000", "--no-cache", *args)
    assert r.exit_code == 0, r.output
    return json.loads(r.output)["reports"][0]


def hook_truth(path):
    """{api_start: (class, site line)} of every copy call inside a hook range, by plain SQL."""
    con = sqlite3.connect(path)
    rows = con.execute(HOOK_OF_CALL).fetchall()
    con.close()
    return {start: (name.split(" ")[1], name.split(" ", 3)[3]) for _corr, start, name in rows}


# Each run captured with the hook and backtraces at once: (copy calls, classes they show).
SAMPLED = {"qwen3vl-before-sampled": (27, {"pageable", "pinned", "pinned_strided"}),
           "qwen3vl-after-sampled": (43, {"pageable", "pinned"}),
           "train-loop-before-sampled": (None, None), "train-loop-after-sampled": (None, None)}


@pytest.mark.parametrize("name", list(SAMPLED))
def test_one_run_gives_the_same_sites_and_classes_from_the_hook_as_from_sampling(cli, exports, tmp_path, name):
    both = exports[name]
    n_calls, classes = SAMPLED[name]
    con = sqlite3.connect(both)
    calls = con.execute(f"SELECT count(*) FROM ({COPY_CALLS})").fetchone()[0]
    hooked = con.execute(f"SELECT count(DISTINCT correlationId) FROM ({HOOK_OF_CALL})").fetchone()[0]
    bt_domain = con.execute("SELECT domainId FROM NVTX_EVENTS WHERE text = 'Python Backtrace on CUDA'").fetchone()[0]
    con.close()
    assert calls == hooked and calls == (n_calls or calls) and calls > 0   # every copy call is inside one hook range
    sampled, hook_only = tmp_path / "sampled.sqlite", tmp_path / "hook.sqlite"
    edited_copy(both, sampled, "DELETE FROM NVTX_EVENTS WHERE text LIKE 'nsysh2d.h2d %'")
    edited_copy(both, hook_only, f"DELETE FROM NVTX_EVENTS WHERE domainId = {bt_domain}",
                "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET callchainId = NULL", "DELETE FROM CUDA_CALLCHAINS")
    a, b = report(cli, sampled), report(cli, hook_only)
    per_call = lambda rep: {t["api_start_ns"]: (t["site_line"], t["source_class"]) for t in rep["top"]}  # noqa: E731
    assert len(per_call(a)) == calls and per_call(a) == per_call(b)
    if classes:
        assert {c for _, c in per_call(a).values()} == classes
    assert all("copy hook saw" in t["evidence"] for t in b["top"] if t["source_class"] != "pinned")
    # and the hook's own names say the same, by plain SQL
    assert {s: (line, cls) for s, (cls, line) in hook_truth(both).items()} == per_call(b)


@pytest.mark.parametrize("variant", ["before", "after"])
def test_the_cheap_capture_has_every_copys_site_and_class(cli, exports, variant):
    path = exports[f"qwen3vl-{variant}-sites"]
    truth = hook_truth(path)
    rep = report(cli, path)
    assert {t["api_start_ns"]: (t["source_class"], t["site_line"]) for t in rep["top"]} == truth
    assert Counter(c for c, _ in truth.values()) == {r["group"]: r["calls"] for r in rep["by_class"]}
    assert not any(r["group"] == "(no backtrace)" for r in rep["by_site"])
    # the two Qwen-VL sites: strided pinned and pageable before the fix, pinned after it
    fixed = {c for c, line in truth.values() if line.startswith("workloads/qwen3vl_inputs.py:")}
    assert fixed == ({"pinned_strided", "pageable"} if variant == "before" else {"pinned"})


@pytest.mark.parametrize("variant", ["before", "after"])
def test_the_cheap_capture_names_the_lines_the_sampled_one_does(cli, exports, variant):
    cheap = {line for _, line in hook_truth(exports[f"qwen3vl-{variant}-sites"]).values()}
    sampled = {t["site_line"] for t in report(cli, exports[f"qwen3vl-{variant}-sampled"])["top"]}
    assert cheap == sampled


def test_copies_made_outside_pytorch_have_no_site_and_say_why(cli, exports):
    path = exports["outside-torch"]
    con = sqlite3.connect(path)
    made = dict(con.execute(f"""WITH c AS ({COPY_CALLS})
        SELECT c.start, e.text FROM c JOIN NVTX_EVENTS e ON e.globalTid = c.globalTid AND e.start <= c.start
        AND e."end" >= c."end" WHERE e.text LIKE 'made by %'""").fetchall())
    con.close()
    rep = report(cli, path)
    assert Counter(made.values()) == {"made by torch": 3, "made by cupy": 3, "made by cudart": 3}
    for t in rep["top"]:
        if made[t["api_start_ns"]] == "made by torch":
            assert t["site_line"] == "workloads/outside_torch.py:45"
        else:
            assert t["site_line"] is None and "did not go through PyTorch" in t["fix"]


def test_a_kineto_trace_with_the_hook_names_call_lines_not_def_lines(cli):
    path = SITES / "train-kineto-before.pt.trace.json.gz"
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    hooks = Counter(e["name"].split(" ", 3)[3] for e in events
                    if e.get("cat") == "user_annotation" and e.get("name", "").startswith("nsysh2d.h2d "))
    rep = report(cli, path)
    lines = Counter(t["site_line"] for t in rep["top"] if t["direction"] == "h2d") if "direction" in rep["top"][0] \
        else Counter(t["site_line"] for t in rep["top"])
    assert lines == hooks
    assert set(hooks) == {"workloads/train_loop.py:96", "workloads/train_loop.py:110", "workloads/train_loop.py:111"}
