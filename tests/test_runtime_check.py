"""The runtime checker (issue 18), CPU only: the classification rules on real tensor layouts, through the real
dispatch path. Copies go to the `meta` device (watched with devices=("meta",)), and a set of source tensors
stands in for pinned memory, which a CPU-only build cannot allocate; everything else (strides, dtypes, the
TorchDispatchMode, the destination layout PyTorch picks) is PyTorch's own."""
import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from nsysh2d.checker import runtime
from nsysh2d.checker.runtime import Checker, source_class


@pytest.fixture
def pinned(monkeypatch):
    """Storages registered here count as pinned (a view of one is pinned too, as with real pinned memory)."""
    ptrs = set()
    monkeypatch.setattr(runtime, "_pinned", lambda t: t.untyped_storage().data_ptr() in ptrs)
    return lambda t: ptrs.add(t.untyped_storage().data_ptr()) or t


CASES = {
    # name: (make the source from a pinned buffer or not, how it is copied, expected class)
    "pinned contiguous": (True, lambda b: b.to("meta", non_blocking=True), "pinned"),
    "pageable": (False, lambda b: b.to("meta", non_blocking=True), "pageable"),
    "numpy-backed": (None, lambda b: b.to("meta", non_blocking=True), "pageable"),
    "pinned sliced [:, :n]": (True, lambda b: b[:, :24].to("meta", non_blocking=True), "pinned_strided"),
    "pinned rows one by one": (True, lambda b: [b[i, :24].to("meta", non_blocking=True) for i in range(3)],
                               "pinned"),
    "pinned transposed (dense)": (True, lambda b: b.t().to("meta", non_blocking=True), "pinned"),
    "pinned dtype change": (True, lambda b: b.to("meta", dtype=torch.float16, non_blocking=True), "pinned"),
    "pinned, like another tensor": (True, lambda b: b.to(torch.empty(1, device="meta", dtype=torch.float16),
                                                         non_blocking=True), "pinned"),
    "pageable, device positional": (False, lambda b: b.to(torch.device("meta"), torch.float16, True), "pageable"),
    "pinned transposed + dtype change": (
        True, lambda b: b.t().to("meta", dtype=torch.float16, non_blocking=True), "pinned_strided"),
    "pinned expanded": (True, lambda b: b[:1].expand(3, 64).to("meta", non_blocking=True), "pinned_strided"),
    "copy_ pinned into same layout": (
        True, lambda b: torch.empty(3, 64, device="meta").copy_(b, non_blocking=True), "pinned"),
    "copy_ pinned transposed into contiguous": (
        True, lambda b: torch.empty(64, 3, device="meta").copy_(b.t(), non_blocking=True), "pinned_strided"),
    "copy_ pageable": (False, lambda b: torch.empty(3, 64, device="meta").copy_(b, non_blocking=True), "pageable"),
}


@pytest.mark.parametrize("inference", [False, True], ids=["grad", "inference_mode"])
@pytest.mark.parametrize("case", list(CASES))
def test_each_layout_is_classified_as_pytorch_copies_it(pinned, case, inference):
    """Under torch.inference_mode `.to()` reaches the mode as aten.to.* (not decomposed into _to_copy): the
    H200 cross-check on qwen3vl, which runs in inference mode, missed such copies until this was handled."""
    is_pinned, copy, expected = CASES[case]
    buf = torch.from_numpy(np.ones((3, 64), dtype=np.float32)) if is_pinned is None else torch.ones(3, 64)
    if is_pinned:
        pinned(buf)
    with Checker(devices=("meta",)) as chk, (torch.inference_mode() if inference else torch.no_grad()):
        copy(buf)
    assert chk.copies and {c.source_class for c in chk.copies} == {expected}
    assert all(c.flagged == (expected != "pinned") for c in chk.copies)
    c = chk.copies[0]
    assert c.site.endswith(("test_runtime_check.py:<lambda>", "test_runtime_check.py:<listcomp>")) and c.site_line.startswith("tests/test_runtime_check.py:")
    assert (c.fix is None) == (expected == "pinned")


def test_blocking_copies_and_other_devices_are_not_watched(pinned):
    buf = torch.ones(3, 64)
    with Checker(devices=("meta",)) as chk:
        buf.to("meta")                                     # non_blocking=False: it is meant to wait
        torch.empty(3, 64, device="meta").copy_(buf)
        buf.clone()
        buf.to(torch.float16, non_blocking=True)           # CPU to CPU
    with Checker() as other:                               # watches cuda only
        buf.to("meta", non_blocking=True)
    assert chk.copies == [] and other.copies == []


def test_pure_rules():
    # (shape, strides, dtype, pinned, dst shape, dst strides, dst dtype)
    f32, f16 = torch.float32, torch.float16
    assert source_class((3, 64), (64, 1), f32, True, (3, 64), (64, 1), f32) == "pinned"
    assert source_class((3, 24), (64, 1), f32, True, (3, 24), (24, 1), f32) == "pinned_strided"
    assert source_class((3, 64), (64, 1), f32, False, (3, 64), (64, 1), f32) == "pageable"
    assert source_class((3, 64), (64, 1), f32, True, (3, 64), (64, 1), f16) == "pinned"
    assert source_class((64,), (1,), f32, True, (3, 64), (64, 1), f32) == "pinned_strided"   # broadcast
    assert runtime.dense((3, 1, 4), (4, 99, 1)) and not runtime.dense((3, 4), (8, 1))


def test_report_and_cli(tmp_path):
    script = tmp_path / "w.py"
    script.write_text("import torch\n"
                      "x = torch.ones(8, 8)\n"
                      "def step():\n"
                      "    x.to('meta', non_blocking=True)\n"
                      "    x[:, :4].to('meta', non_blocking=True)\n"
                      "step(); step()\n")
    r = subprocess.run([sys.executable, "-m", "nsysh2d.cli", "check", "--device", "meta", "--format", "json",
                        "--fail", str(script)], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 1, r.stderr                   # --fail: pageable copies were seen
    doc = json.loads(r.stdout)["runtime_check"]
    assert doc["checked"] == doc["flagged"] == 4
    rows = {row["site_line"]: row for row in doc["by_site"]}
    w = f"{tmp_path.name}/w.py"                         # parent/file, as the trace analysis names sites
    assert set(rows) == {f"{w}:4", f"{w}:5"} and all(row["calls"] == 2 for row in rows.values())
    assert {row["site"] for row in doc["by_site"]} == {f"{w}:step"}
    assert rows[f"{w}:4"]["bytes"] == 2 * 8 * 8 * 4
    t = subprocess.run([sys.executable, "-m", "nsysh2d.cli", "check", "--device", "meta", str(script)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert t.returncode == 0 and f"{w}:4" in t.stdout and f"fix {w}:5 [pageable]" in t.stdout
    bad = tmp_path / "bad.py"
    bad.write_text("raise SystemExit(3)\n")
    r = subprocess.run([sys.executable, "-m", "nsysh2d.cli", "check", str(bad)], capture_output=True, text=True)
    assert r.returncode == 4 and "exited 3" in r.stderr


def test_pytest_plugin_fixtures(tmp_path):
    """The installed plugin (entry point pytest11): no_blocking_h2d fails a test whose copy blocks and names the
    line; h2d_check hands the Checker to the test."""
    (tmp_path / "pytest.ini").write_text("[pytest]\nh2d_devices = meta\n")
    (tmp_path / "test_user.py").write_text(
        "import torch\n"
        "def test_blocks(no_blocking_h2d):\n"
        "    torch.ones(4, 4).to('meta', non_blocking=True)\n"
        "def test_fine(no_blocking_h2d):\n"
        "    torch.ones(4, 4).to('meta')\n"
        "def test_sees(h2d_check):\n"
        "    torch.ones(4, 4)[:, :2].to('meta', non_blocking=True)\n"
        "    assert [c.source_class for c in h2d_check.copies] == ['pageable']\n")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert "1 failed, 2 passed" in r.stdout, r.stdout
    assert f"{tmp_path.name}/test_user.py:3: pageable copy of 64 bytes" in r.stdout


def test_check_runs_python_script_and_python_m_forms(tmp_path):
    (tmp_path / "mod_w.py").write_text("import torch\ntorch.ones(4).to('meta', non_blocking=True)\n")
    for form in (["python", "mod_w.py"], ["python3", "-m", "mod_w"], ["mod_w.py"]):
        r = subprocess.run([sys.executable, "-m", "nsysh2d.cli", "check", "--device", "meta", "--format", "json",
                            "--", *form], capture_output=True, text=True, cwd=tmp_path)
        assert r.returncode == 0, (form, r.stderr)
        assert json.loads(r.stdout)["runtime_check"]["flagged"] == 1, form


def test_the_checker_needs_only_torch():
    """It runs where the workload runs (a GPU box with torch): no DuckDB, polars or pyarrow imported."""
    code = ("import sys, nsysh2d.checker.runtime, nsysh2d.checker.pytest_plugin, nsysh2d.cli.check\n"
            "print(sorted(m for m in ('duckdb', 'polars', 'pyarrow') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr


class _Flight:
    """Stands in for the CUDA event recorded behind a pinned copy: in flight until `land()`."""
    events: list = []

    def __init__(self):
        self.done = False
        _Flight.events.append(self)

    def query(self):
        return self.done


@pytest.mark.parametrize("write, races", [
    (lambda b: b.fill_(2.0), True),                        # the whole source, in place
    (lambda b: b[1, 5:9].copy_(torch.ones(4)), True),      # a piece of the rows that were copied
    (lambda b: b[:, 40:].zero_(), False),                  # columns the copy never read
    (lambda b: torch.add(b[:1], 1, out=b[2:3]), True),     # an out= argument
    (lambda b: b.add(1), False),                           # reads only
])
def test_a_write_into_a_pinned_source_in_flight_is_flagged(pinned, write, races):
    """Issue 40: the rule that comes with every pinning fix. The copy reads [:, :24] of a pinned [3, 64] buffer
    row by row (the vLLM M-RoPE fix); a write that overlaps those bytes before the copy's event completes races."""
    buf = pinned(torch.ones(3, 64))
    _Flight.events = []
    chk = Checker(devices=("meta",))
    chk._event = _Flight
    with chk:
        for i in range(3):
            buf[i, :24].to("meta", non_blocking=True)
        write(buf)
    assert len(_Flight.events) == 3 and {c.source_class for c in chk.copies} == {"pinned"}
    assert bool(chk.rewrites) == races
    if races:
        r = chk.rewrites[0]
        assert "test_runtime_check.py:" in r.site_line and "test_runtime_check.py:" in r.copy_site_line
        assert r.site_line != r.copy_site_line and "event" in r.fix


def test_a_write_after_the_copy_completed_is_not_flagged(pinned):
    buf = pinned(torch.ones(3, 64))
    _Flight.events = []
    chk = Checker(devices=("meta",))
    chk._event = _Flight
    with chk:
        buf.to("meta", non_blocking=True)
        for e in _Flight.events:
            e.done = True          # what event.synchronize() gives
        buf.fill_(3.0)
        pageable = torch.ones(8)
        pageable.to("meta", non_blocking=True)   # a pageable copy reads a temporary: no event, no race
        pageable.fill_(1.0)
    assert not chk.rewrites and len(_Flight.events) == 1 and not chk._in_flight


def test_rewrites_reach_the_report_the_table_and_the_gate(pinned, tmp_path, capsys):
    from nsysh2d.present import CheckView, output

    buf = pinned(torch.ones(16))
    chk = Checker(devices=("meta",))
    chk._event = _Flight
    with chk:
        buf.to("meta", non_blocking=True)
        buf.fill_(0.0)
    doc = chk.report()
    assert doc["flagged"] == 0 and len(doc["rewrites"]) == 1 and doc["rewrites"][0]["op"] == "fill_"
    text = output("table", CheckView(doc))
    assert "race tests/test_runtime_check.py:" in text and "may not have read yet" in text
    assert json.loads(output("json", CheckView(doc)))["runtime_check"]["rewrites"][0]["bytes"] == 64


def test_a_site_accepted_in_source_is_accepted_and_listed(pinned, tmp_path):
    """Issue 57: the allowlist of lint. A copy whose line says `# nsysh2d: ok[RULE] reason` (or `# gpu-sync-ok:`)
    is not flagged; the report, the table and the pytest plugin list it with its reason; a comment without a
    reason or for another rule accepts nothing."""
    from nsysh2d.present import CheckView, output

    script = tmp_path / "w.py"
    script.write_text("import torch\n"
                      "x = torch.ones(8, 8)\n"
                      "x.to('meta', non_blocking=True)  # nsysh2d: ok[H2D001] 256 bytes once at start-up\n"
                      "x[:, :4].to('meta', non_blocking=True)  # gpu-sync-ok: measured 3 us\n"
                      "x.to('meta', non_blocking=True)  # nsysh2d: ok[H2D001]\n"
                      "x.to('meta', non_blocking=True)  # nsysh2d: ok[pinned_strided] the wrong rule\n")
    chk, code = runtime.run_script([str(script)], ("meta",))
    assert code == 0
    doc = chk.report()
    assert doc["checked"] == 4 and doc["flagged"] == 2
    assert sorted((r["site_line"].rsplit(":", 1)[1], r["accepted"]) for r in doc["accepted"]) == [
        ("3", "256 bytes once at start-up"), ("4", "measured 3 us")]
    assert "accepted in source " in output("table", CheckView(doc)) and "measured 3 us" in output("table", CheckView(doc))
    (tmp_path / "pytest.ini").write_text("[pytest]\nh2d_devices = meta\n")
    (tmp_path / "test_user.py").write_text(
        "import torch\n"
        "def test_ok(no_blocking_h2d):\n"
        "    torch.ones(4, 4).to('meta', non_blocking=True)  # nsysh2d: ok[pageable] a tiny table, once\n")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "test_user.py")],
                       capture_output=True, text=True, cwd=tmp_path)
    assert "1 passed" in r.stdout and "accepted in source" in r.stdout and "a tiny table, once" in r.stdout, r.stdout


def test_a_rewrite_accepted_in_source(pinned):
    buf = pinned(torch.ones(16))
    chk = Checker(devices=("meta",))
    chk._event = _Flight
    with chk:
        buf.to("meta", non_blocking=True)
        buf.fill_(0.0)  # nsysh2d: ok[H2D004] the test waits on the event itself
    assert not chk.rewrites and [r.accepted for r in chk.accepted_rewrites] == ["the test waits on the event itself"]
    assert chk.report()["accepted"][0]["op"] == "fill_"
