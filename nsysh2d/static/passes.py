"""The two passes over the files that can hold a finding, on one CPU or on several.

Pass 1 reads the classes of the files that mention `pin_memory`: what their `self.X = ...` make (facts.py). Pass 2
runs the data flow (flow.py) over every function of the files that mention a copy. Each file is parsed once: with
several CPUs and enough source, the files are split into shards by size, one forked worker per shard parses its
files, sends its pass-1 facts, receives the run's, and sends its findings back (Linux; elsewhere one process).
"""
from __future__ import annotations

import ast
import os
import re
import threading

from .facts import Facts, Module, attribute_facts
from .flow import Flow, Hit
from .values import PINNED_KINDS

PARALLEL_BYTES = 3_000_000   # below this much source to parse, a worker's start costs more than it saves

# `torch.tensor(..., device=...)` and the like: `device=` within 1,500 characters after the call opens (a superset
# of the calls). A file without one, without `non_blocking` and without `pin_memory` cannot hold a finding and is
# not parsed.
_DEVICE_BUILD = re.compile(r"\b(?:tensor|as_tensor|asarray)\([\s\S]{0,1500}?\bdevice\s*=")


def copies(text: str) -> bool:
    return "non_blocking" in text or "device=" in text and _DEVICE_BUILD.search(text) is not None


def run_passes(jobs: dict[str, str], fact_only: dict[str, str], cpus: int, accept_inside=frozenset()) -> tuple[dict, list]:
    """jobs: path -> text of the files to lint that need parsing; fact_only: more files read by pass 1 only.
    Returns ({path: [Hit]}, [(path, problem)])."""
    items = [(p, t, True) for p, t in jobs.items()] + [(p, t, False) for p, t in fact_only.items()]
    size = sum(len(t) for _p, t, _l in items)
    n = min(cpus, max(1, len(items)))

    # fork only a process of one thread (a lock held by another thread would stay held in the child)
    if n < 2 or size < PARALLEL_BYTES or not hasattr(os, "fork") or threading.active_count() > 1:
        shard = Shard(items, accept_inside)
        facts = merge([shard.pass1()])
        return shard.pass2(facts), shard.errors
    import multiprocessing as mp   # lazy: only a lint of many large files starts processes (a pre-commit hook starts fast)

    ctx = mp.get_context("fork")   # the texts reach the workers without pickling
    shards = [[] for _ in range(n)]
    for i, item in enumerate(sorted(items, key=lambda x: -len(x[1]))):
        shards[i % n].append(item)
    pipes, procs = [], []
    for part in shards:
        mine, theirs = ctx.Pipe()
        proc = ctx.Process(target=_worker, args=(theirs, part, accept_inside), daemon=True)
        proc.start()
        pipes.append(mine)
        procs.append(proc)
    try:
        facts = merge([p.recv() for p in pipes])
        for p in pipes:
            p.send(facts)
        hits, errors = {}, []
        for p in pipes:
            h, e = p.recv()
            hits.update(h)
            errors += e
    finally:
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
    return hits, errors


def _worker(conn, items, accept_inside) -> None:
    shard = Shard(items, accept_inside)
    conn.send(shard.pass1())
    facts = conn.recv()
    conn.send((shard.pass2(facts), shard.errors))
    conn.close()


TEST_FILE = re.compile(r"(^|[/\\])(test_[^/\\]*|[^/\\]*_test|testing|conftest)\.py$")


class Shard:
    def __init__(self, items, accept_inside=frozenset()):
        self.mods, self.lint, self.errors = {}, set(), []
        for path, text, lint_it in items:
            try:
                self.mods[path] = Module(ast.parse(text, filename=path))
            except (SyntaxError, ValueError) as e:
                if lint_it:   # a file read for its classes only is reported by its own run
                    self.errors.append((path, f"cannot parse (line {getattr(e, 'lineno', '?')}: "
                                              f"{getattr(e, 'msg', e)}); skipped"))
                continue
            if lint_it and copies(text):
                self.lint.add(path)
            mod = self.mods[path]
            mod.classes_for_facts = "pin_memory" in text
            mod.test_file = bool(TEST_FILE.search(path))
            mod.accept_inside = accept_inside

    def pass1(self) -> list[tuple[str, dict]]:
        """(class name, what its attributes hold) for every class of the files that pin memory."""
        return [(cls.name, attribute_facts(mod, cls)) for mod in self.mods.values() if mod.classes_for_facts
                for cls in mod.classes.values()]

    def pass2(self, facts: Facts) -> dict[str, list[Hit]]:
        out = {}
        for path in self.lint:
            mod = self.mods[path]
            mod.facts, mod.class_facts, mod._summaries = facts, {}, {}   # pass 1 ran without the run's facts
            out[path] = [h for func, cls, setup in mod.functions for h in Flow(mod, func, cls, setup=setup).run()]
        return out


def merge(parts: list[list[tuple[str, dict]]]) -> Facts:
    """Per class, what its attributes hold; per attribute name, the value every class agrees on (pinned kinds
    agree). A class name defined twice in the run is left out."""
    votes: dict[str, list] = {}
    facts, seen = Facts(), set()
    for name, own in (pair for part in parts for pair in part):
        if name in seen:
            facts.classes.pop(name, None)
        else:
            facts.classes[name] = own
        seen.add(name)
        for attr, v in own.items():
            votes.setdefault(attr, []).append(v)
    for attr, vs in votes.items():
        kinds = {v.kind for v in vs}
        if kinds <= PINNED_KINDS or len(kinds) == 1 and "obj" not in kinds:
            facts.names[attr] = vs[0]
    return facts
