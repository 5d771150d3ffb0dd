"""What a file and the whole run know before the flow: the file's names (torch and numpy aliases, functions,
classes) and, per class, what its attributes hold (a buffer pinned in __init__ is pinned in every method)."""
from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace

from .flow import Flow
from .values import PINNED_KINDS, SETUP, V


@dataclass
class Facts:
    """What pass 1 learnt from the run's files that pin memory."""
    names: dict = field(default_factory=dict)     # attribute name -> V, where every class that assigns it agrees
    classes: dict = field(default_factory=dict)   # class name -> {attribute: V} (a name two classes share: dropped)


class Module:
    """One file: its torch/numpy names, its functions and classes, and what attributes hold (class facts from the
    file, name facts from every file of the run)."""

    def __init__(self, tree: ast.Module, facts: Facts | None = None):
        self.torch, self.numpy = {"torch"}, {"np", "numpy"}
        self.safetensors = False
        self.classes_for_facts = True   # pass 1 reads this file's classes (files that pin memory)
        self.test_file = False          # test_*.py, *_test.py, testing.py, conftest.py: every function is set-up
        self.accept_inside: set = set()   # [tool.nsysh2d.lint] accept-inside: context managers that accept
        self.funcs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.classes: dict[str, ast.ClassDef] = {}
        self.functions: list[tuple] = []   # (function, its class or None, inside a set-up function), all of them
        self.self_stores: dict[str, list] = {}    # class name -> its `self.X = value` assignments
        self.facts = facts or Facts()
        self.class_facts: dict[str, dict] = {}
        self._summaries: dict[int, V | None] = {}
        self._index(tree, None, False)

    def _index(self, node, cls, in_func: bool, in_setup: bool = False) -> None:
        """One walk over the file: imports, classes, functions, and the classes' attribute stores."""
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                continue
            if isinstance(child, ast.ImportFrom) and (child.module or "").startswith("safetensors"):
                self.safetensors = True
            if isinstance(child, ast.Import):
                self.safetensors |= any(a.name.startswith("safetensors") for a in child.names)
                for a in child.names:
                    if a.name in ("torch", "numpy"):
                        (self.torch if a.name == "torch" else self.numpy).add(a.asname or a.name)
            elif isinstance(child, ast.ClassDef):
                self.classes[child.name] = child
                self._index(child, child, False, in_setup)
                continue
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                setup = in_setup or bool(SETUP.match(child.name))
                self.functions.append((child, cls, in_setup))
                self._index(child, cls, True, setup)
                continue
            elif isinstance(child, ast.Assign) and in_func and cls is not None and len(child.targets) == 1:
                t = child.targets[0]
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    self.self_stores.setdefault(cls.name, []).append((t.attr, child.value))
            self._index(child, cls, in_func, in_setup)

    def fact(self, cls: ast.ClassDef | None, key: str, attr: str) -> V | None:
        if cls is not None and key == f"self.{attr}":
            own = self.class_facts.get(cls.name)
            if own is None:
                self.class_facts[cls.name] = {}   # while it is computed: its own assignments see nothing
                own = self.class_facts[cls.name] = attribute_facts(self, cls)
            if attr in own:
                return own[attr]
        return self.facts.names.get(attr)

    def known_class(self, name: str) -> bool:
        return name in self.classes or name in self.facts.classes

    def obj_attr(self, cls_name: str, attr: str) -> V | None:
        """An attribute of an object whose class is known (`CpuGpuBuffer(...)`, made here or returned by a helper)."""
        if cls_name in self.classes:
            return self.fact(self.classes[cls_name], f"self.{attr}", attr)
        return self.facts.classes.get(cls_name, {}).get(attr)

    def method_of(self, cls, name: str):
        if cls is None:
            return None
        return next((n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name),
                    None)

    def summary(self, func, cls) -> V | None:
        """What a helper returns (its own copies are reported where it is analyzed itself)."""
        if id(func) not in self._summaries:
            self._summaries[id(func)] = None   # recursion: unknown
            flow = Flow(self, func, cls, report=False)
            flow.run()
            self._summaries[id(func)] = replace(flow.returns, pin_line=0) if flow.returns else None
        return self._summaries[id(func)]


def attribute_facts(mod: Module, cls: ast.ClassDef) -> dict[str, V]:
    """self.X -> what every `self.X = ...` of the class makes, where that is known and the same kind (a pinned
    buffer made in __init__ is pinned in the other methods); unknown assignments do not vote."""
    votes: dict[str, list] = {}
    probe = Flow(mod, None, cls, report=False)
    for attr, value in mod.self_stores.get(cls.name, ()):
        v = probe.ev(value)
        if v is not None and v.kind != "list":
            votes.setdefault(attr, []).append(v)
    out = {}
    for attr, vs in votes.items():
        kinds = {v.kind for v in vs}
        if kinds <= PINNED_KINDS or len(kinds) == 1:
            # the root is kept where the attribute aliases another of self (`self.np = self.cpu.numpy()`)
            out[attr] = replace(vs[0], pin_line=0, root=vs[0].root if vs[0].root.startswith("self.") else "")
    return out
