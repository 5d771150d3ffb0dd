"""`nsysh2d lint` (issue 57): the static check on the project's own Qwen3-VL workload first (the two sites vLLM
fixed, before and after), then one snippet per rule, suppressions, configuration, every output parsed back, and
hostile names. Truth is the source text: where a copy is, found by searching the file, never a line number the
linter gave."""
from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT
from nsysh2d.static import Settings, lint

INPUTS = ROOT / "workloads" / "qwen3vl_inputs.py"


def line_of(path, needle: str) -> int:
    hits = [i for i, ln in enumerate(path.read_text().splitlines(), 1) if needle in ln]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def run(tmp_path, code: str, name: str = "m.py", **settings):
    f = tmp_path / name
    f.write_text(textwrap.dedent(code))
    return lint([str(f)], Settings(**settings))


def codes(result) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in result.findings]


def marked(tmp_path, name: str = "m.py") -> list[tuple[str, int]]:
    """(rule, line) of each line the snippet marks `# <- H2D00N` (several marks: several findings)."""
    lines = (tmp_path / name).read_text().splitlines()
    return [(m, i) for i, ln in enumerate(lines, 1) for m in re.findall(r"<- (H2D\d{3})", ln)]


# ----------------------------------------------------------------------------------------- the real workload
class Variant(ast.NodeTransformer):
    """The code one value of `variant` runs: `variant == X`, `variant in (...)` decided, dead branches dropped."""

    def __init__(self, value: str):
        self.value = value

    def visit_Compare(self, node):
        self.generic_visit(node)
        if isinstance(node.left, ast.Name) and node.left.id == "variant" and len(node.ops) == 1:
            right, op = node.comparators[0], node.ops[0]
            vals = [e.value for e in right.elts] if isinstance(right, ast.Tuple) else [getattr(right, "value", None)]
            if isinstance(op, (ast.Eq, ast.In)):
                return ast.Constant(self.value in vals)
            if isinstance(op, (ast.NotEq, ast.NotIn)):
                return ast.Constant(self.value not in vals)
        return node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        consts = [v.value for v in node.values if isinstance(v, ast.Constant)]
        if isinstance(node.op, ast.And) and False in consts:
            return ast.Constant(False)
        rest = [v for v in node.values if not (isinstance(v, ast.Constant) and v.value is True)]
        return rest[0] if isinstance(node.op, ast.And) and len(rest) == 1 else node

    def visit_If(self, node):
        self.generic_visit(node)
        if isinstance(node.test, ast.Constant):
            return (node.body if node.test.value else node.orelse) or [ast.Pass()]
        return node


def variant_source(value: str) -> str:
    tree = Variant(value).visit(ast.parse(INPUTS.read_text()))
    return ast.unparse(ast.fix_missing_locations(tree))


def test_mrope_positions_before_is_flagged_after_is_not():
    """MRopeBuffer.copy_to_device: `before` copies `self.cpu[:, :n]` (a strided view of the pinned buffer made in
    __init__) -> pinned_strided; `after` copies each contiguous row -> nothing."""
    r = lint([str(INPUTS)])
    before = line_of(INPUTS, "self.gpu[:, :n].copy_(self.cpu[:, :n], non_blocking=True)")
    after = line_of(INPUTS, "self.gpu[row, :n].copy_(self.cpu[row, :n], non_blocking=True)")
    at = {f.line: f for f in r.findings}
    assert at[before].code == "H2D002" and at[before].source_class == "pinned_strided"
    assert "self.cpu[:, :n]" in at[before].message
    assert after not in at


@pytest.mark.parametrize("variant, flagged", [("before", True), ("after", False), ("staged", False)])
def test_vision_position_ids_each_variant(tmp_path, variant, flagged):
    """vision_inputs_to_device: `before` copies numpy-built ids through torch.from_numpy (pageable); `after` pins
    them first (a loop over the two arrays: not a per-step loop). Each variant's own code path, linted alone."""
    f = tmp_path / f"qwen3vl_inputs_{variant}.py"
    f.write_text(variant_source(variant))
    r = lint([str(f)])
    copy = line_of(f, "out.append(t.to(device, non_blocking=True))") if variant != "staged" else None
    mine = [x for x in r.findings if x.line == copy]
    assert bool(mine) == flagged, r.findings
    if flagged:
        assert mine[0].code == "H2D001" and mine[0].source_class == "pageable" and "torch.from_numpy" in mine[0].message
    assert not [x for x in r.findings if x.code == "H2D003"]   # the pin of `after` is not per step


def test_both_variants_in_one_file_is_pageable_on_some_paths():
    """Unspecialized, the copy line is reached pinned (after) and pageable (before): flagged, and it says so."""
    r = lint([str(INPUTS)])
    copy = line_of(INPUTS, "out.append(t.to(device, non_blocking=True))")
    f, = [x for x in r.findings if x.line == copy]
    assert f.code == "H2D001" and "on some paths" in f.message


def test_workload_loop_waits_before_rewriting():
    """workloads/qwen3vl.py rewrites its pinned staging buffers every step after `inputs_copied.synchronize()`
    (inside `if inputs_copied is not None`): no H2D004 there."""
    r = lint([str(ROOT / "workloads" / "qwen3vl.py")])
    assert not [f for f in r.findings if f.code == "H2D004"], r.findings


# ----------------------------------------------------------------------------------------- one snippet per rule
def test_pageable_sources(tmp_path):
    r = run(tmp_path, """
        import numpy as np
        import torch

        def step(arr, ids, device):
            a = torch.from_numpy(arr).to(device, non_blocking=True)            # <- H2D001
            b = torch.tensor(ids).cuda(non_blocking=True)                      # <- H2D001
            c = torch.from_numpy(np.asarray(arr)).to("cuda", non_blocking=True)  # <- H2D001
            d = torch.zeros(4).to("cpu", non_blocking=True)                    # to the CPU
            e = torch.zeros(4).to(torch.float16, non_blocking=True)            # a dtype, no copy
            cpu = "cpu"
            f = torch.arange(8).to(cpu, non_blocking=True)                     # a CPU device
            g = torch.zeros(4, pin_memory=True)
            g.to(device, non_blocking=True)
            h = torch.cat([torch.from_numpy(arr), torch.ones(2)])
            dst = torch.empty(6, device=device)
            dst.copy_(h, non_blocking=True)                                    # <- H2D001
            z = torch.zeros(3)
            z.to(device)                                                       # blocking by choice
    """)
    assert codes(r) == marked(tmp_path) and len(r.findings) == 4
    assert all(f.source_class == "pageable" for f in r.findings)


def test_pinned_strided_views(tmp_path):
    r = run(tmp_path, """
        import torch

        class Buf:
            def __init__(self, n, device):
                self.cpu = torch.zeros((3, n + 1), dtype=torch.int64, pin_memory=True)
                self.gpu = torch.zeros((3, n + 1), dtype=torch.int64, device=device)

            def copy(self, n):
                self.gpu[:, :n].copy_(self.cpu[:, :n], non_blocking=True)      # <- H2D002 strided
                self.gpu[0, :n].copy_(self.cpu[0, :n], non_blocking=True)      # a row: contiguous
                self.gpu[:n].copy_(self.cpu[:n], non_blocking=True)            # leading slice
                x = self.cpu.t().to("cuda", non_blocking=True)                 # dense reorder, strides kept
                self.gpu.copy_(self.cpu.t(), non_blocking=True)                # <- H2D002 into another layout
                self.cpu[:, :n].contiguous().to("cuda", non_blocking=True)     # <- H2D001 a new pageable tensor
                self.cpu.expand(2, 3, n + 1).to("cuda", non_blocking=True)     # <- H2D002 stride 0
    """)
    assert codes(r) == marked(tmp_path) and len(r.findings) == 4
    assert r.findings[0].source_class == "pinned_strided"


def test_pin_memory_per_step(tmp_path):
    r = run(tmp_path, """
        import torch

        def train(loader, device):
            for batch in loader:
                x = batch.pin_memory()                                         # <- H2D003
                x.to(device, non_blocking=True)

        def once(t, device):
            return t.pin_memory().to(device, non_blocking=True)               # no loop here

        def init_buffers(ts, device):
            for t in ts:
                t.pin_memory().to(device, non_blocking=True)                  # set-up, not per step

        def two(a, b, device):
            for t in (a, b):
                t.pin_memory().to(device, non_blocking=True)                  # a literal pair, not a loop of steps

        def first_run(self, ts, dst):
            if self.state is None:                                             # lazy: the first run only
                for i, t in enumerate(ts):
                    dst[i].copy_(t.pin_memory(), non_blocking=True)
    """)
    assert codes(r) == marked(tmp_path) and len(r.findings) == 1
    assert r.findings[0].source_class == "pinned" and "cudaHostAlloc" in r.findings[0].fix


def test_pinned_rewrite_in_flight(tmp_path):
    r = run(tmp_path, """
        import torch

        def loop(batches, dst):
            buf = torch.empty(1024, pin_memory=True)
            for b in batches:
                buf.copy_(b)                                                   # <- H2D004 next step's write
                dst.copy_(buf, non_blocking=True)

        def waits(batches, dst):
            buf = torch.empty(1024, pin_memory=True)
            for b in batches:
                buf.copy_(b)
                dst.copy_(buf, non_blocking=True)
                torch.cuda.current_stream().synchronize()

        def straight(dst, ev):
            buf = torch.empty(8, pin_memory=True)
            dst.copy_(buf, non_blocking=True)
            buf[0] = 1                                                         # <- H2D004
            ev.synchronize()
            buf[1] = 2                                                         # after the wait
    """)
    assert codes(r) == marked(tmp_path) and len(r.findings) == 2


def test_rewrite_through_a_numpy_alias_of_a_pinned_buffer(tmp_path):
    """`self.np = self.cpu.numpy()` aliases the pinned buffer: a write through `.np` after a copy from `.cpu` in
    the same loop races it (seen through an object of the class too)."""
    r = run(tmp_path, """
        import torch

        class Buf:
            def __init__(self, n, device):
                self.cpu = torch.zeros(n, dtype=torch.int64, pin_memory=True)
                self.np = self.cpu.numpy()
                self.gpu = torch.zeros(n, dtype=torch.int64, device=device)

        class Runner:
            def __init__(self, n, device):
                self.ids = Buf(n, device)

            def steps(self, batches):
                for b in batches:
                    self.ids.np[:len(b)] = b                                   # <- H2D004
                    self.ids.gpu.copy_(self.ids.cpu, non_blocking=True)

            def waits(self, batches, ev):
                for b in batches:
                    ev.synchronize()
                    self.ids.np[:len(b)] = b
                    self.ids.gpu.copy_(self.ids.cpu, non_blocking=True)
                    ev.record()
    """)
    assert codes(r) == marked(tmp_path) and len(r.findings) == 1


def test_device_tensor_from_host_data(tmp_path):
    """H2D005 is opt-in (select it): a synchronous build of a device tensor from host data, outside set-up code."""
    code = """
        import torch

        class Runner:
            def __init__(self, device):
                self.table = torch.tensor([1, 2, 3], device=device)           # set-up: once

            def step(self, ids, device, x):
                a = torch.tensor([len(ids)], device=device)                    # <- H2D005
                b = torch.tensor(ids.tolist(), device=self.device)             # <- H2D005
                c = torch.tensor(0, device=device)                             # a scalar
                d = torch.tensor([1, 2], device="cpu")                         # stays on the host
                e = torch.tensor([], device=device)                            # no bytes
                f = torch.tensor([1, 2], device=x.device)                      # x may be a CPU tensor
                if self._cache is None:
                    self._cache = torch.tensor([1, 2], device=device)         # lazy, once

            def pointers(self, key, ptrs, device):
                if (t := self._ptrs.get(key)) is not None:
                    return t
                t = torch.tensor(ptrs.tolist(), device=device)                 # a cache miss: once per key
                self._ptrs[key] = t
                return t

            def _warmup_kernels(self, device):
                def inner():
                    return torch.tensor([1, 2], device=device)                 # inside set-up
                return inner()
    """
    assert not run(tmp_path, code).findings   # off by default
    r = run(tmp_path, code, select=["ALL"])
    assert codes(r) == marked(tmp_path) and len(r.findings) == 2
    assert not run(tmp_path, code, "test_runner.py", select=["ALL"]).findings   # a test file is set-up code


def test_accept_inside_a_context(tmp_path):
    r = run(tmp_path, """
        import torch

        def f(a, device):
            with sync_allowed():
                torch.from_numpy(a).to(device, non_blocking=True)
            torch.from_numpy(a).to(device, non_blocking=True)                  # <- H2D001
    """, accept_inside=["sync_allowed"])
    assert codes(r) == marked(tmp_path) and len(r.findings) == 1
    assert [(f.line, f.accepted) for f in r.accepted] == [(6, "inside `with sync_allowed()` (accept-inside)")]


def test_lists_of_host_tensors_and_helpers(tmp_path):
    """A list filled with `.append` of CPU tensors, or built by a comprehension over a same-class helper that returns
    torch.from_numpy, and then torch.cat-ed: a pageable CPU tensor (the rotary position ids of the VL models)."""
    r = run(tmp_path, """
        import numpy as np
        import torch

        class Vision:
            @staticmethod
            def ids(h, w):
                return torch.from_numpy(np.stack([np.arange(h), np.arange(w)], axis=-1))

            def by_comprehension(self, grid):
                pos = [self.ids(h, w) if t == 1 else self.ids(h, w).repeat(t, 1) for t, h, w in grid]
                return torch.cat(pos, dim=0).to(self.device, non_blocking=True)      # <- H2D001

            def by_append(self, grid, cos):
                pos = []
                for t, h, w in grid:
                    hp = torch.arange(h).unsqueeze(1).expand(-1, w)
                    pos.append(torch.stack([hp, hp], dim=-1).repeat(t, 1))
                pos = torch.cat(pos, dim=0)
                return pos.to(cos.device, non_blocking=True)                         # <- H2D001

            def of_unknown(self, parts):
                return torch.cat([p for p in parts]).to(self.device, non_blocking=True)
    """)
    assert codes(r) == marked(tmp_path) and len(r.findings) == 2


def test_file_backed_sources(tmp_path):
    r = run(tmp_path, """
        import numpy as np
        import torch
        from safetensors import safe_open
        from safetensors.torch import load_file

        def load(path, device):
            sd = load_file(path)
            w = sd["w"].to(device, non_blocking=True)                                # <- H2D006
            with safe_open(path, framework="pt") as f:
                b = f.get_tensor("b").to(device, non_blocking=True)                  # <- H2D006
            m = torch.from_numpy(np.memmap(path, dtype=np.float32)).to(device, non_blocking=True)  # <- H2D006
            t = torch.load(path, mmap=True)["x"].float().to(device, non_blocking=True)  # <- H2D001
            u = torch.load(path)["x"].to(device, non_blocking=True)                  # not mapped: unknown
    """)
    assert codes(r) == marked(tmp_path) and len(r.findings) == 4
    assert {f.source_class for f in r.findings if f.code == "H2D006"} == {"file_backed"}


def test_one_changed_file_still_knows_its_package_classes(tmp_path):
    """pre-commit names only the changed files: a pinned buffer class defined elsewhere in the package (and made by
    a helper of the runner) is still known, from the file's top package."""
    pkg = tmp_path / "pkg"
    (pkg / "worker").mkdir(parents=True)
    for d in (pkg, pkg / "worker"):
        (d / "__init__.py").write_text("")
    (pkg / "utils.py").write_text(textwrap.dedent("""
        import torch

        class CpuGpu:
            def __init__(self, *size, device, pin_memory=True):
                self.cpu = torch.zeros(*size, device="cpu", pin_memory=pin_memory)
                self.gpu = torch.zeros(*size, device=device)
    """))
    runner = pkg / "worker" / "runner.py"
    runner.write_text(textwrap.dedent("""
        from pkg.utils import CpuGpu

        class Runner:
            def __init__(self, n, device):
                self.pos = self._buffer(3, n + 1)

            def _buffer(self, *size):
                return CpuGpu(*size, device=self.device)

            def prepare(self, n):
                self.pos.gpu[:, :n].copy_(self.pos.cpu[:, :n], non_blocking=True)    # <- H2D002
    """))
    r = lint([str(runner)])
    assert codes(r) == marked(pkg / "worker", "runner.py") and r.findings[0].source_class == "pinned_strided"


# ----------------------------------------------------------------------------------------- suppression
def test_suppressions(tmp_path):
    r = run(tmp_path, """
        import torch

        def f(a, device):
            torch.from_numpy(a).to(device, non_blocking=True)  # nsysh2d: ok[H2D001] 16 bytes, once per request
            torch.from_numpy(a).to(device, non_blocking=True)  # gpu-sync-ok: measured, 2 us
            torch.from_numpy(a).to(device, non_blocking=True)  # nsysh2d: ok[H2D001]
            torch.from_numpy(a).to(device, non_blocking=True)  # nsysh2d: ok[pinned_strided] wrong rule
            # nsysh2d: ok[pageable] the comment may sit on the line above
            torch.from_numpy(a).to(device, non_blocking=True)
            torch.from_numpy(a).to(device, non_blocking=True)  # nsysh2d: ok[H2D099] no such rule
            s = "# nsysh2d: ok[H2D001]"  # a string is not a comment; nor is `# nsysh2d: ok[x]` quoted in prose
            t = '''
            x.to(device, non_blocking=True)  # nsysh2d: ok[H2D001]
            '''
    """)
    assert [(f.line, f.accepted) for f in r.accepted] == [
        (5, "16 bytes, once per request"), (6, "measured, 2 us"), (10, "the comment may sit on the line above")]
    assert sorted(codes(r)) == [("H2D000", 7), ("H2D000", 11), ("H2D001", 7), ("H2D001", 8), ("H2D001", 11)]
    assert r.exit_code == 1


# ----------------------------------------------------------------------------------------- configuration
SNIPPET = "import torch\ndef f(a, d):\n    return torch.from_numpy(a).to(d, non_blocking=True)\n"


def test_config_include_exclude_rules(tmp_path, monkeypatch, cli):
    (tmp_path / "gen").mkdir()
    (tmp_path / "pkg").mkdir()
    for p in ("pkg/a.py", "gen/b.py", "pkg/c.pyx", "pkg/d.py"):
        (tmp_path / p).write_text(SNIPPET)
    (tmp_path / "pkg/d.py").write_text(SNIPPET.replace("non_blocking=True)", "non_blocking=True)  # x")
                                       + "def g(ids, d):\n    return torch.tensor(ids.tolist(), device=d)\n")
    (tmp_path / "pyproject.toml").write_text('[tool.nsysh2d.lint]\ninclude = ["*.py", "*.pyx"]\nexclude = ["gen"]\n'
                                             'ignore = ["pageable-device-tensor"]\n')
    monkeypatch.chdir(tmp_path)
    out = cli("lint", ".", "--format", "json")
    doc = json.loads(out.output)["lint"]
    assert out.exit_code == 1 and sorted({f["path"] for f in doc["findings"]}) == ["./pkg/a.py", "./pkg/c.pyx", "./pkg/d.py"]
    assert {f["code"] for f in doc["findings"]} == {"H2D001"}
    # exclude holds for files named on the command line too (pre-commit names them)
    assert cli("lint", "gen/b.py").exit_code == 0
    assert cli("lint", ".", "--select", "H2D005", "--ignore", "").exit_code == 0   # the config's ignore stays
    (tmp_path / "pyproject.toml").write_text('[tool.nsysh2d.lint]\nselect = "H2D001"\n')
    bad = cli("lint", ".")
    assert bad.exit_code == 2 and "must be a list of strings" in bad.output
    (tmp_path / "pyproject.toml").write_text('[tool.nsysh2d.lint]\nselekt = ["H2D001"]\n')
    assert cli("lint", ".").exit_code == 2
    (tmp_path / "pyproject.toml").write_text('[tool.nsysh2d.lint]\nselect = ["H2D001"\n')
    assert cli("lint", ".").exit_code == 2
    (tmp_path / "pyproject.toml").unlink()
    assert cli("lint", ".", "--select", "nope").exit_code == 2


def test_syntax_error_is_one_line_and_skipped(tmp_path):
    (tmp_path / "good.py").write_text(SNIPPET)
    (tmp_path / "bad.py").write_text("import torch\ndef f(:\n    x.to(d, non_blocking=True)\n")
    p = subprocess.run([sys.executable, "-m", "nsysh2d.cli", "lint", str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("nsysh2d: error: ") and "bad.py" in err[0] and "line 2" in err[0]
    assert "good.py:3:" in p.stdout   # the other files are still linted


def test_clean_exit_zero(tmp_path, cli):
    (tmp_path / "ok.py").write_text("import torch\ndef f(t, d):\n    return t.pin_memory().to(d, non_blocking=True)\n")
    out = cli("lint", tmp_path)
    assert out.exit_code == 0 and "0 finding(s)" in out.output


# ----------------------------------------------------------------------------------------- outputs
HOSTILE_REASON = "ok \x1b[2J\u202egnp.exe ::error::forged %0A ##[warning]x"


@pytest.fixture
def hostile_tree(tmp_path):
    """A file whose name holds a newline, `::`, `,` and `%`, one finding, one site accepted with a hostile reason,
    and a file that does not parse."""
    d = tmp_path / "src"
    d.mkdir()
    name = "a\n::error file=x,line=1::forged,%0A.py"
    (d / name).write_text(SNIPPET + "def g(a, d):\n    return torch.from_numpy(a).to(d, non_blocking=True)  "
                          f"# nsysh2d: ok[H2D001] {HOSTILE_REASON}\n")
    (d / "broken.py").write_text("def f(:\n    x.to(d, non_blocking=True)\n")
    return d, name


def test_json_document(hostile_tree, cli):
    d, name = hostile_tree
    out = cli("lint", d, "--format", "json")
    doc = json.loads(out.stdout)["lint"]
    assert out.exit_code == 2   # a file could not be parsed: not a complete verdict
    f, = doc["findings"]
    assert f["path"] == str(d / name) and (f["line"], f["code"], f["source_class"]) == (3, "H2D001", "pageable")
    assert f["fix"].startswith("pin the source")
    a, = doc["accepted"]
    assert a["accepted"] == HOSTILE_REASON and a["line"] == 5   # exact in the data
    assert "\x1b" not in out.stdout and "\u202e" not in out.stdout and "##[" not in out.stdout
    assert [e["path"] for e in doc["errors"]] == [str(d / "broken.py")]
    assert set(doc["rules"]) == {"H2D000", "H2D001", "H2D002", "H2D003", "H2D004", "H2D005", "H2D006"}


def test_sarif_required_fields(hostile_tree, cli):
    """SARIF 2.1.0's required properties, checked by hand (no schema validator among the dependencies): log
    (version, runs), run (tool.driver.name), result (message.text; ruleId naming a rule of the driver),
    physicalLocation (artifactLocation.uri, a URI reference: percent-encoded), region (startLine >= 1),
    invocation (executionSuccessful), suppression (kind)."""
    from urllib.parse import unquote

    d, name = hostile_tree
    out = cli("lint", d, "--format", "sarif")
    log = json.loads(out.stdout)
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json") and len(log["runs"]) == 1
    run_ = log["runs"][0]
    rules = run_["tool"]["driver"]["rules"]
    assert run_["tool"]["driver"]["name"] == "nsysh2d" and all(r["id"] and r["help"]["text"] for r in rules)
    assert run_["invocations"][0]["executionSuccessful"] is False
    note, = run_["invocations"][0]["toolExecutionNotifications"]
    assert note["message"]["text"] and note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    found, accepted = run_["results"]
    for res in (found, accepted):
        assert res["message"]["text"] and rules[res["ruleIndex"]]["id"] == res["ruleId"] == "H2D001"
        assert res["level"] in ("none", "note", "warning", "error")
        loc = res["locations"][0]["physicalLocation"]
        uri = loc["artifactLocation"]["uri"]
        assert unquote(uri) == str(d / name) and not any(c in uri for c in "\n ,%:" if c != "%") and "\n" not in uri
        assert loc["region"]["startLine"] >= 1 and loc["region"]["startColumn"] >= 1
    assert "suppressions" not in found
    assert accepted["suppressions"] == [{"kind": "inSource", "justification": accepted["suppressions"][0]["justification"]}]
    assert "\x1b" not in out.stdout and "\\u001b" not in out.stdout.replace("\\\\", "")   # made visible: \x1b as text


def test_github_annotations_one_command_per_line(hostile_tree, cli):
    d, name = hostile_tree
    out = cli("lint", d, "--format", "github")
    lines = out.stdout.splitlines()
    assert len(lines) == 3 and all(ln.startswith(("::error ", "::notice ")) for ln in lines), lines
    err, notice, broken = lines
    props = err.split("::")[1]   # the properties end at the first `::`: the file name cannot forge one
    assert props.startswith("error file=") and ",line=3,col=" in props and props.count(",") == 4
    assert "a\\n%3A%3Aerror file=x%2Cline=1%3A%3Aforged%2C%250A.py" in props
    assert notice.startswith("::notice ") and "accepted in source: ok \\x1b[2J\\u202egnp.exe" in notice
    assert "##[" not in out.stdout and "\x1b" not in out.stdout and "broken.py" in broken


def test_text_lines_are_safe(hostile_tree, cli):
    d, name = hostile_tree
    out = cli("lint", d)
    lines = out.stdout.splitlines()
    first = lines[0]
    assert first.endswith("H2D001 [pageable] non_blocking copy from pageable memory (`torch.from_numpy`, line 3): it "
                          "waits for the GPU work queued on the stream")
    assert "a\\n::error file=x,line=1::forged,%0A.py:3:" in first   # the newline visible, one line
    assert not any(ln.lstrip().startswith("::") for ln in lines) and "\x1b" not in out.stdout
    assert any("accepted: ok \\x1b[2J\\u202egnp.exe" in ln for ln in lines)


def test_lint_imports_no_torch_duckdb_polars(tmp_path):
    """The command and the API run without torch, DuckDB or polars: checked in a fresh interpreter, and in
    -X importtime's list of every module the command imported."""
    (tmp_path / "m.py").write_text(SNIPPET)
    code = ("import sys\nfrom nsysh2d.static import lint\nr = lint([sys.argv[1]])\nassert r.findings\n"
            "print(sorted(m for m in ('torch', 'duckdb', 'polars', 'numpy', 'pyarrow') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code, str(tmp_path / "m.py")], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.strip() == "[]", p.stderr
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "nsysh2d.cli", "lint", str(tmp_path)],
                       capture_output=True, text=True)
    imported = {ln.split("|")[-1].strip().split(".")[0] for ln in p.stderr.splitlines() if "|" in ln}
    assert p.returncode == 1 and "nsysh2d" in imported and "click" in imported
    assert not imported & {"torch", "duckdb", "polars", "numpy", "pyarrow", "matplotlib"}, imported


# ----------------------------------------------------------------------------------------- the three layers
def test_three_layers_agree_on_the_qwen3vl_workload(tmp_path):
    """One run of workloads/qwen3vl.py --variant before under nsys and the runtime checker at once (the bundled
    qwen3vl-check.sqlite and qwen3vl-check.json): the classes the trace gives its blocking copies per function =
    the checker's flagged classes per function = lint's findings per function of the before code path."""
    from conftest import H200
    from nsysh2d.analyses.options import Options
    from nsysh2d.runner.run import analyze_one

    f = tmp_path / "qwen3vl_inputs.py"
    f.write_text(variant_source("before"))
    where = {}
    for fn in ast.walk(ast.parse(f.read_text())):
        if isinstance(fn, ast.FunctionDef):
            where.update({i: fn.name for i in range(fn.lineno, fn.end_lineno + 1)})
    by_lint = {(where[x.line], x.source_class) for x in lint([str(f)]).findings}
    check = json.loads((H200 / "qwen3vl-check.json").read_text())["runtime_check"]
    by_check = {(r["site"].split(":")[1], r["source_class"]) for r in check["by_site"]
                if r["flagged"] and r["site"].startswith("workloads/qwen3vl_inputs.py:")}
    rep = analyze_one(str(H200 / "qwen3vl-check.sqlite"), Options(top=1000)).to_json()
    by_trace = {(t["site"].split(":")[1], t["source_class"]) for t in rep["top"]
                if t["waited_for_gpu"] and (t["site"] or "").startswith("workloads/qwen3vl_inputs.py:")}
    assert by_lint == by_check == by_trace == {("copy_to_device", "pinned_strided"),
                                               ("vision_inputs_to_device", "pageable")}


def test_gate_accepts_sites_marked_in_source(tmp_path, cli):
    """The gate reads each offending copy's source (--source-root): a site marked `# nsysh2d: ok[...] reason` is
    taken out of the count and listed with its reason. The bundled trace's lines are older than the file, so the
    function the trace names is matched (docs/lint.md)."""
    from conftest import H200

    trace = H200 / "qwen3vl-before.sqlite"
    (tmp_path / "workloads").mkdir()
    src = tmp_path / "workloads" / "qwen3vl_inputs.py"
    src.write_text(INPUTS.read_text())
    first = json.loads(cli("gate", trace, "--no-cache", "--source-root", tmp_path, "--format", "json").stdout)
    rule = first["verdicts"][0]["rules"][0]
    assert not rule["passed"] and "accepted" not in rule and rule["offenders"]
    text = src.read_text()
    text = text.replace("non_blocking=True)  # strided slice: pageable temp",
                        "non_blocking=True)  # nsysh2d: ok[H2D002] kept: the bug this project measures")
    text = text.replace("out.append(t.to(device, non_blocking=True))",
                        "out.append(t.to(device, non_blocking=True))  # gpu-sync-ok: the before variant")
    src.write_text(text)
    out = cli("gate", trace, "--no-cache", "--source-root", tmp_path, "--format", "json")
    rule = json.loads(out.stdout)["verdicts"][0]["rules"][0]
    assert out.exit_code == 0 and rule["passed"] and not rule["offenders"]
    assert sorted((a["site_line"], a["accepted"]) for a in rule["accepted"]) == sorted(
        (o["site_line"], "kept: the bug this project measures" if o["source_class"] == "pinned_strided"
         else "the before variant") for o in first["verdicts"][0]["rules"][0]["offenders"])
    assert "accepted in source (not counted)" in rule["message"]
    table = cli("gate", trace, "--no-cache", "--source-root", tmp_path).output
    assert "kept: the bug this project measures" in table and "the before variant" in table


def test_gate_reads_no_file_outside_the_source_root(tmp_path):
    """A trace's site names are untrusted: one that climbs out of the source root is not read."""
    from nsysh2d.rules.allowlist import accepted_site

    (tmp_path / "out.py").write_text("x.to(d, non_blocking=True)  # gpu-sync-ok: outside\n")
    root = tmp_path / "root"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "in.py").write_text("x.to(d, non_blocking=True)  # gpu-sync-ok: inside\n")
    assert accepted_site(None, "pkg/in.py:1", "pageable", str(root)) == "inside"
    assert accepted_site(None, "../out.py:1", "pageable", str(root)) is None
    assert accepted_site(None, f"{tmp_path}/out.py:1", "pageable", str(root)) is None
    assert accepted_site(None, "other/in.py:1", "pageable", str(root), search=False) is None
    assert accepted_site(None, "pkg/in.py:1", "pinned", str(root)) == "inside"   # gpu-sync-ok: any rule


def test_forked_shards_find_what_one_process_finds():
    """The two passes split over forked workers give the findings of one process (the workloads, threshold 0)."""
    code = ("import json, sys\nfrom nsysh2d.static import lint, passes\n"
            "import nsysh2d.static.lint as L\npasses.PARALLEL_BYTES = int(sys.argv[1])\n"
            "L.usable_cpus = lambda: int(sys.argv[2])\n"
            "r = lint([sys.argv[3]])\nprint(json.dumps([f.to_json() for f in r.findings]))\n")
    out = [subprocess.run([sys.executable, "-c", code, limit, cpus, str(ROOT / "workloads")], capture_output=True,
                          text=True) for limit, cpus in (("0", "2"), ("0", "3"), ("10000000000", "1"))]
    assert all(p.returncode == 0 for p in out), [p.stderr for p in out]
    docs = [json.loads(p.stdout) for p in out]
    assert docs[0] == docs[1] == docs[2] and len(docs[0]) >= 4


def test_pre_commit_hook_runs_this_command():
    """.pre-commit-hooks.yaml at the repository root: the hook a project names in three lines (README)."""
    import yaml

    hook, = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "nsysh2d-lint" and hook["entry"] == "nsysh2d lint" and hook["types"] == ["python"]
    assert hook["language"] == "python"
    readme = (ROOT / "README.md").read_text()
    assert "hooks: [{id: nsysh2d-lint}]" in readme
