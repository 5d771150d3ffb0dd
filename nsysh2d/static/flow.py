"""One function's statements in order, with what each name holds (exprs.py), and the rules checked at each copy.

Branches are walked each from the same state and joined (values.join); a loop body is walked twice, so that a
write at the top of the next iteration meets the copy at its bottom; nothing is walked more than that (a nested
loop below depth 2 once), so the cost is linear in the function's size. Helpers of the same module (and methods of
the same class through `self.`) give their return value, analyzed once each (facts.Module.summary).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, replace

from .exprs import Exprs
from .values import CPU_KINDS, PINNED_KINDS, SETUP, V, dotted, host_named, join, mentions_pinning, short



@dataclass(frozen=True)
class Hit:
    code: str
    line: int
    col: int
    end_line: int
    message: str
    accepted: str = ""   # inside a `with` the project accepts (`accept-inside`): the reason


class Flow(Exprs):
    def __init__(self, mod, func, cls, report: bool = True, setup: bool = False):
        self.mod, self.func, self.cls, self.report = mod, func, cls, report
        self.env: dict[str, V] = {}
        self.dev: dict[str, str] = {}
        self.in_flight: dict[str, int] = {}
        self.loop = self.depth = 0
        # Set-up (run once, not per step): by its name or an enclosing function's, in a test file, under a lazy
        # `if x is None:` (self.lazy), or inside a `with` the project accepts (self.inside).
        self.setup = setup or mod.test_file or func is not None and bool(SETUP.match(func.name))
        self.lazy, self.inside = 0, []
        self.hits: dict[tuple, Hit] = {}
        self.returns: V | None = None
        self._returned = False

    def run(self) -> list[Hit]:
        self.block(self.func.body)
        return list(self.hits.values())

    # ------------------------------------------------------------------------------------------ statements
    def block(self, stmts) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, s) -> None:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return   # analyzed on their own
        if isinstance(s, ast.Assign):
            v = self.ev(s.value)
            for t in s.targets:
                self.bind(t, v, s.value)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.bind(s.target, self.ev(s.value), s.value)
        elif isinstance(s, ast.AugAssign):
            self.ev(s.value)
            self.written(self.ev(s.target), s)
        elif isinstance(s, ast.If):
            self.ev(s.test)
            lazy = _is_none(s.test)
            self.lazy += lazy
            self.branches([s.body, s.orelse], mentions_pinning(s.test))
            self.lazy -= lazy
            # `if (x := cache.get(k)) is not None: return x`: what follows runs on a cache miss (once per key)
            self.lazy += _is_none(s.test, ast.IsNot) and bool(s.body) and isinstance(s.body[-1], ast.Return)
        elif isinstance(s, (ast.For, ast.AsyncFor, ast.While)):
            self.loop_stmt(s)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            accepts = [i.context_expr for i in s.items if _call_name(i.context_expr) in self.mod.accept_inside]
            for item in s.items:
                if item.optional_vars is None:
                    self.ev(item.context_expr)
                if item.optional_vars is not None:   # `with safe_open(...) as f`: the handle itself
                    v = self.ev(item.context_expr)
                    self.bind(item.optional_vars, v if v is not None and v.kind == "obj" else None, None)
            self.inside += [f"inside `with {_call_name(a)}()` (accept-inside)" for a in accepts]
            self.block(s.body)
            del self.inside[len(self.inside) - len(accepts):]
        elif isinstance(s, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            self.block(s.body)
            self.branches([h.body for h in s.handlers] + [s.orelse], False)
            self.block(s.finalbody)
        elif isinstance(s, ast.Match):
            self.ev(s.subject)
            self.branches([c.body for c in s.cases] + [[]], False)
        elif isinstance(s, ast.Return):
            v = self.ev(s.value) if s.value is not None else None
            self.returns = v if not self._returned else join(self.returns, v)
            self._returned = True
        else:
            for child in ast.iter_child_nodes(s):
                if isinstance(child, ast.expr):
                    self.ev(child)

    def branches(self, bodies, pin_wins: bool) -> None:
        start, dev0, flight0 = dict(self.env), dict(self.dev), dict(self.in_flight)
        ends, kept, added = [], set(flight0), {}
        for body in bodies:
            self.env, self.dev, self.in_flight = dict(start), dict(dev0), dict(flight0)
            self.block(body)
            if not _ends(body):
                ends.append(self.env)
            # A wait in any branch counts (`if event is not None: event.synchronize()`); a copy in any branch too.
            kept &= set(self.in_flight)
            added.update({k: v for k, v in self.in_flight.items() if flight0.get(k) != v})
        self.env = _merge(ends, pin_wins) if ends else start
        self.dev, self.in_flight = dev0, {**{k: flight0[k] for k in kept}, **added}

    def loop_stmt(self, s) -> None:
        literal = isinstance(getattr(s, "iter", None), (ast.Tuple, ast.List, ast.Set))
        self.ev(s.iter if not isinstance(s, ast.While) else s.test)
        if not isinstance(s, ast.While):
            self.bind(s.target, None, None)
        self.loop += 0 if literal else 1
        self.depth += 1
        before = dict(self.env)
        for _ in range(2 if self.depth <= 2 else 1):
            self.block(s.body)
        self.env = _merge([before, self.env], False)
        self.loop -= 0 if literal else 1
        self.depth -= 1
        self.block(s.orelse)

    def bind(self, target, v: V | None, value) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            vals = value.elts if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) else None
            for i, t in enumerate(target.elts):
                self.bind(t, self.env_value(vals[i]) if vals else None, None)
            return
        if isinstance(target, ast.Starred):
            return self.bind(target.value, None, None)
        key = dotted(target)
        if key is None:   # a store into part of something: buf[...] = x, buf.numpy()[...] = x
            base = target.value if isinstance(target, (ast.Subscript, ast.Attribute)) else target
            self.written(self.ev(base), target)
            return
        if v is not None and v.kind in PINNED_KINDS and not v.root:
            v = replace(v, root=key)
        for k in [k for k in self.env if k.startswith(key + ".")]:
            del self.env[k]
        self.env.pop(key, None) if v is None else self.env.__setitem__(key, v)
        dev = self.device_of(value) if isinstance(value, ast.Constant) or isinstance(value, ast.Call) and \
            dotted(value.func) in {f"{t}.device" for t in self.mod.torch} else None
        self.dev.pop(key, None) if dev is None else self.dev.__setitem__(key, dev)

    def env_value(self, node):
        return self.env.get(dotted(node)) if dotted(node) is not None else None

    # ------------------------------------------------------------------------------------------ the rules
    def hit(self, code: str, node, message: str, line: int | None = None, col: int | None = None) -> None:
        if self.report:
            ln = line or node.lineno
            key = (code, ln, col if col is not None else node.col_offset)
            self.hits.setdefault(key, Hit(code, ln, key[2], getattr(node, "end_lineno", ln) if not line else ln, message,
                                          self.inside[-1] if self.inside else ""))

    def copied(self, src: V | None, node, how: str, dst_node) -> None:
        """A non_blocking copy to an accelerator (`.to`, `.cuda`, `copy_`) of `src`."""
        if src is None or src.kind not in CPU_KINDS:
            return
        where = f" ({src.how}, line {src.line})" if src.how and src.line else ""
        if src.kind in ("pageable", "ndarray", "maybe"):
            paths = " on some paths" if src.kind == "maybe" else ""
            self.hit("H2D001", node, f"non_blocking copy from pageable memory{paths}{where}: it waits for the GPU "
                                     "work queued on the stream")
        elif src.kind == "file_backed":
            self.hit("H2D006", node, f"non_blocking copy from file-backed (memory-mapped) memory{where}: pageable, "
                                     "so it waits for the GPU work queued on the stream, and may read the disk")
        elif src.kind == "strided" or src.kind == "permuted" and how == "copy_" and not _reordered(dst_node):
            self.hit("H2D002", node, f"non_blocking copy of a strided view of pinned memory{where}: PyTorch copies "
                                     "it through a pageable temporary, which waits for the GPU")
        else:
            if src.pin_line:
                self.hit("H2D003", node, f"`.pin_memory()` or a pinned allocation inside a loop (copied at line "
                                         f"{node.lineno}): a cudaHostAlloc whenever the caching host allocator grows, "
                                         "and a host copy every time", line=src.pin_line, col=src.pin_col)
            if src.root:
                self.in_flight[src.root] = node.lineno

    def written(self, v: V | None, node) -> None:
        """An in-place write into `v`'s memory: is a non_blocking copy from that pinned buffer still in flight?"""
        if v is not None and v.root and v.kind in PINNED_KINDS and v.root in self.in_flight:
            line = self.in_flight[v.root]
            self.hit("H2D004", node, f"writes pinned buffer `{v.root}` while the non_blocking copy from it at line "
                                     f"{line} may still be in flight (no event wait or synchronize in between)")

    def synced(self) -> None:
        self.in_flight.clear()

    def device_build(self, node) -> None:
        if not self.setup and not self.lazy and self.func is not None:
            self.hit("H2D005", node, f"`{short(node.func)}(...)` of host data on the device: a synchronous copy "
                                     "from pageable memory that waits for the stream")


def _is_none(test, op=ast.Is) -> bool:
    """`if x is None:` / `if self.x is None:` (a lazy initialisation: its body runs once)."""
    return isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], op) and \
        isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None


def _call_name(node) -> str:
    f = node.func if isinstance(node, ast.Call) else node
    key = dotted(f)
    return key.rsplit(".", 1)[-1] if key else ""


def _reordered(dst_node) -> bool:
    """The destination is reordered too (`gpu.t().copy_(pinned.t())`): the layouts may match."""
    return dst_node is not None and any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and
                                        n.func.attr in ("t", "transpose", "permute") or
                                        isinstance(n, ast.Attribute) and n.attr in ("T", "mT")
                                        for n in ast.walk(dst_node)) or host_named(dst_node)


def _ends(body) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _merge(envs: list[dict], pin_wins: bool) -> dict:
    if len(envs) == 1:
        return envs[0]
    keys = set(envs[0]).intersection(*envs[1:])
    out = {}
    for k in keys:
        v = envs[0][k]
        for e in envs[1:]:
            v = join(v, e[k], pin_wins)
        if v is not None:
            out[k] = v
    return out
