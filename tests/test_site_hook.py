"""Issue 58: call sites and source classes recorded by the copy hook (capture/site_hook.py) instead of sampling.

The hook's classes are the runtime checker's (one rule set), checked on real layouts through the real Tensor
methods (copies to the `meta` device, which needs no GPU; a set of storages stands in for pinned memory). The
analysis reads the hook's ranges back from a real cheap H100 capture (tests/data/h100/cost-none.sqlite: no
sampling, no backtraces) into which ranges were written around its copy calls as the hook writes them; the truth
is the plain-SQL join of those ranges with the calls, computed here."""
import json
import sqlite3
import sys

import numpy as np
import pytest
import torch

from conftest import DATA, edited_copy
from nsysh2d.checker import runtime
from nsysh2d.rules import sites
from nsysh2d.capture import site_hook
from nsysh2d.capture.copy_class import FileMaps

from test_runtime_check import CASES

CHEAP = DATA / "h100" / "cost-none.sqlite"


@pytest.fixture
def hook(monkeypatch):
    """The hook on the meta device, its ranges recorded instead of sent to NVTX; uninstalled after."""
    names, ptrs = [], set()
    monkeypatch.setattr(torch.cuda.nvtx, "range_push", lambda n: names.append(n) or 0)
    monkeypatch.setattr(torch.cuda.nvtx, "range_pop", lambda: 0)
    monkeypatch.setattr(runtime, "_pinned", lambda t: t.untyped_storage().data_ptr() in ptrs)
    h = site_hook.Hook(torch, devices=("meta",))
    h.pinned = lambda t: t.untyped_storage().data_ptr() in ptrs
    h.install()
    try:
        yield h, names, lambda t: ptrs.add(t.untyped_storage().data_ptr()) or t
    finally:
        h.uninstall()


@pytest.mark.parametrize("case", list(CASES))
def test_the_hook_classes_each_layout_as_the_runtime_checker_does(hook, case):
    h, names, pin = hook
    is_pinned, copy, expected = CASES[case]
    buf = torch.from_numpy(np.ones((3, 64), dtype=np.float32)) if is_pinned is None else torch.ones(3, 64)
    if is_pinned:
        pin(buf)
    with runtime.Checker(devices=("meta",)) as chk:
        copy(buf)
    classes = {sites.parse_hook_range(n)[0] for n in names}
    assert classes == {expected} == {c.source_class for c in chk.copies}
    assert len(names) == len(chk.copies)


def test_the_range_names_the_call_line_and_function(hook):
    h, names, _ = hook
    line = sys._getframe().f_lineno + 1
    torch.ones(4).to("meta", non_blocking=True)
    cls, site, site_line = sites.parse_hook_range(names[0])
    assert (cls, site, site_line) == ("pageable", "tests/test_site_hook.py:"
                                      "test_the_range_names_the_call_line_and_function",
                                      f"tests/test_site_hook.py:{line}")


def test_copies_that_move_nothing_to_a_watched_device_get_no_range(hook):
    h, names, _ = hook
    torch.ones(4).to("cpu")
    torch.ones(4).to(torch.float16)
    torch.empty(0).to("meta")
    torch.empty(3, device="meta").to("meta")
    torch.empty(3).copy_(torch.ones(3))
    with pytest.raises(TypeError):   # .to's own error, not the hook's
        torch.ones(2).to(object())
    assert names == []


def test_file_mappings_are_file_backed(tmp_path):
    """np.memmap, torch.from_file (shared or private mapping) and torch.load(mmap=True) tensors lie in a file
    mapping of /proc/self/maps; an ordinary tensor and a numpy array do not."""
    raw, pt = tmp_path / "w.bin", tmp_path / "w.pt"
    np.arange(1 << 18, dtype=np.float32).tofile(raw)
    torch.save({"w": torch.ones(1 << 18)}, pt)
    maps = FileMaps()
    mapped = [torch.from_numpy(np.asarray(np.memmap(raw, dtype=np.float32, mode="r"))),
              torch.from_file(str(raw), shared=False, size=1 << 18, dtype=torch.float32),
              torch.from_file(str(raw), shared=True, size=1 << 18, dtype=torch.float32),
              torch.load(pt, mmap=True)["w"]]
    assert all(maps.is_file(t.data_ptr()) for t in mapped)
    assert not any(maps.is_file(t.data_ptr()) for t in (torch.ones(1 << 18), torch.from_numpy(np.ones(1 << 18))))


def test_the_runtime_checker_flags_a_memory_mapped_source(tmp_path):
    raw = tmp_path / "w.bin"
    np.ones(1 << 16, dtype=np.float32).tofile(raw)
    src = torch.from_file(str(raw), shared=False, size=1 << 16, dtype=torch.float32)
    with runtime.Checker(devices=("meta",)) as chk:
        src.to("meta", non_blocking=True)
        torch.ones(8).to("meta", non_blocking=True)
    assert [c.source_class for c in chk.copies] == ["file_backed", "pageable"]
    assert chk.copies[0].flagged and "memory-mapped" in chk.copies[0].fix


@pytest.mark.parametrize("name", ["nsysh2d.h2d pageable", "nsysh2d.h2d bogus f a.py:1", "nsysh2d.h2d pinned f a.py",
                                  "nsysh2d.h2d pinned f a.py:x", "step 3", "", "nsysh2d.h2d pinned f :3"])
def test_names_that_are_not_the_hooks_name_no_site(name):
    assert sites.parse_hook_range(name) is None


def test_a_site_line_with_blanks_and_colons_parses():
    name = sites.hook_range_name("pinned_strided", "my fn", "my dir/a:b.py:42")
    assert sites.parse_hook_range(name) == ("pinned_strided", "my dir/a:b.py:my_fn", "my dir/a:b.py:42")


# ---------------------------------------------------------------------------------------------- the analysis
HOOKED = [("pinned_strided", "copy_to_device", "workloads/qwen3vl_inputs.py:119"),
          ("file_backed", "load_weights", "workloads/loader.py:12"),
          ("pageable", "vision_inputs_to_device", "workloads/qwen3vl_inputs.py:140")]


@pytest.fixture(scope="module")
def hooked_export(tmp_path_factory):
    """cost-none.sqlite with a hook range around each copy call but the last (a copy made outside PyTorch):
    pageable sources get the HOOKED names in turn, pinned ones `pinned`."""
    path = tmp_path_factory.mktemp("hook") / "hooked.sqlite"
    con = sqlite3.connect(CHEAP)
    calls = con.execute("""
        SELECT r.start, r."end", r.globalTid, r.correlationId, k.label FROM CUPTI_ACTIVITY_KIND_RUNTIME r
        JOIN StringIds s ON s.id = r.nameId JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = r.correlationId
        JOIN ENUM_CUDA_MEM_KIND k ON k.id = m.srcKind
        WHERE s.value LIKE 'cudaMemcpyAsync%' AND m.copyKind = 1 ORDER BY r.start""").fetchall()
    push_pop = con.execute("SELECT id FROM ENUM_NSYS_EVENT_TYPE WHERE name = 'NvtxPushPopRange'").fetchone()[0]
    con.close()
    expected, rows, pageable = {}, [], 0
    for start, end, tid, corr, kind in calls[:-1]:
        if kind == "Pinned":
            cls, fn, line = "pinned", "prepare_inputs", "workloads/qwen3vl.py:315"
        else:
            cls, fn, line = HOOKED[pageable % len(HOOKED)]
            pageable += 1
        expected[corr] = (cls, line)
        name = sites.hook_range_name(cls, fn, line).replace("'", "''")
        rows.append(f"INSERT INTO NVTX_EVENTS (start, \"end\", eventType, text, globalTid) "
                    f"VALUES ({start - 1}, {end + 1}, {push_pop}, '{name}', {tid})")
    edited_copy(CHEAP, path, *rows)
    return path, expected, calls[-1][3]


def test_the_report_takes_each_copys_site_and_class_from_the_hook(cli, hooked_export):
    path, expected, outside = hooked_export
    r = cli("analyze", path, "--format", "json", "--min-duration", "0", "--top", "1000", "--no-cache")
    rep = json.loads(r.output)["reports"][0]
    by_corr = {}
    con = sqlite3.connect(path)   # plain SQL: each top row's call by its start time
    for row in rep["top"]:
        corr = con.execute("SELECT correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE start = ?",
                           (row["api_start_ns"],)).fetchone()[0]
        by_corr[corr] = row
    assert set(by_corr) == set(expected) | {outside}
    for corr, (cls, line) in expected.items():
        assert (by_corr[corr]["source_class"], by_corr[corr]["site_line"]) == (cls, line)
        assert not by_corr[corr]["nvtx_path"] or "nsysh2d.h2d" not in by_corr[corr]["nvtx_path"]
    assert by_corr[outside]["site"] in (None, "(unknown site)") or by_corr[outside]["site_line"] is None
    assert "did not go through PyTorch" in by_corr[outside]["fix"]
    hooked = [r for c, r in by_corr.items() if c != outside and r["source_class"] != "pinned"]
    assert all("copy hook saw" in r["evidence"] for r in hooked)
    classes = {r["group"]: r["calls"] for r in rep["by_class"]}
    truth = [c for c, _ in expected.values()] + [by_corr[outside]["source_class"]]   # that one: its memory kind
    assert classes == {c: truth.count(c) for c in set(truth)}


def test_the_hooks_ranges_are_no_nvtx_range_of_the_program(cli, hooked_export):
    """Paths, the by-NVTX table and range wall times are the same as without the hook's ranges."""
    path, _, _ = hooked_export
    plain = json.loads(cli("analyze", CHEAP, "--format", "json", "--by", "nvtx", "--no-cache").output)["reports"][0]
    hooked = json.loads(cli("analyze", path, "--format", "json", "--by", "nvtx", "--no-cache").output)["reports"][0]
    assert [(r["group"], r["calls"]) for r in hooked["by_nvtx"]] == [(r["group"], r["calls"]) for r in plain["by_nvtx"]]
    assert "nsysh2d.h2d" not in json.dumps(hooked["by_nvtx"])
