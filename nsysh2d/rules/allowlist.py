"""The one allowlist of the three layers: a site accepted in its source line is accepted by `nsysh2d lint`, by the
runtime checker (`nsysh2d check`, the pytest plugin) and by `gate`, and each lists it as accepted with its reason.

    x_gpu.copy_(x_cpu, non_blocking=True)  # nsysh2d: ok[H2D001] tiny, once per request (#123)
    x_gpu.copy_(x_cpu, non_blocking=True)  # gpu-sync-ok: tiny, once per request      (vLLM's comment: any rule)

The bracket names rules by code (H2D001), name (pageable-non-blocking) or source class (pageable), comma-separated.
A reason is required: a comment without one accepts nothing, and lint reports it (H2D000).
Light: re, linecache and the rule table only (the runtime checker runs where only torch is installed)."""
from __future__ import annotations

import ast
import io
import linecache
import os
import re
import tokenize
from dataclasses import dataclass

from .fixes import RULES

# At the start of the comment, or of a second comment in it (noqa: E501, then the mark); not quoted in
# a comment's prose (`` `# nsysh2d: ok[...]` ``).
_OK = re.compile(r"(?:^|\s)#\s*nsysh2d:\s*ok\[([^\]]*)\]\s*(.*)$", re.IGNORECASE)
_VLLM = re.compile(r"(?:^|\s)#\s*gpu-sync-ok\b:?\s*(.*)$", re.IGNORECASE)


@dataclass(frozen=True)
class Mark:
    """A suppression comment: the rules it names (empty: every rule) and its reason ("" when none was given)."""
    rules: frozenset
    reason: str
    col: int

    def covers(self, code: str) -> bool:
        if not self.rules:
            return True
        name, cls = RULES[code][0], RULES[code][1]
        return bool(self.rules & {code.lower(), name, cls})


def comment_of(line: str) -> str | None:
    """The comment of one source line (a `#` inside a string is not one), or None."""
    if "#" not in line:
        return None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(line).readline):
            if tok.type == tokenize.COMMENT:
                return tok.string
    except (tokenize.TokenError, SyntaxError):   # a line that opens a bracket or a string: its tokens so far
        pass
    return None


def comments(text: str) -> list[tuple[int, int, str]]:
    """(line, column, text) of every comment of a file (not `#` inside strings and docstrings); none when the file
    does not tokenize."""
    try:
        return [(t.start[0], t.start[1], t.string) for t in tokenize.generate_tokens(io.StringIO(text).readline)
                if t.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError):
        return []


def mark(comment: str | None) -> Mark | None:
    """The suppression a comment makes, if any."""
    if not comment or "nsysh2d" not in comment and "gpu-sync-ok" not in comment:
        return None
    line = comment
    m = _OK.search(line)
    if m:
        names = frozenset(n.strip().lower() for n in m.group(1).split(",") if n.strip())
        return Mark(names, m.group(2).strip(), m.start())
    m = _VLLM.search(line)
    if m:
        return Mark(frozenset(), m.group(1).strip(), m.start())
    return None


def unknown_rules(m: Mark) -> list[str]:
    known = {c.lower() for c in RULES} | {r[0] for r in RULES.values()} | {r[1] for r in RULES.values() if r[1]}
    return sorted(m.rules - known)


def accepted(lines: list[str], first: int, last: int, code: str) -> str | None:
    """The reason a finding of rule `code` on source lines first..last (1-based) is accepted, or None. The comment
    may sit on any line of the statement, or alone on the line just above it."""
    above = lines[first - 2].strip() if first >= 2 else ""
    span = [lines[i - 1] for i in range(first, min(last, len(lines)) + 1)]
    for text in [comment_of(t) for t in span] + ([above] if above.startswith("#") else []):
        m = mark(text)
        if m is not None and m.reason and m.covers(code):
            return m.reason
    return None


def accepted_at(path: str, line: int, code: str) -> str | None:
    """The same for a file on disk at one line (the runtime checker's and the gate's sites); None when the file
    cannot be read."""
    linecache.checkcache(path)   # a file edited since it was read (a long test session, a notebook)
    lines = linecache.getlines(path)
    if not lines or line < 1 or line > len(lines):
        return None
    return accepted(lines, line, line, code)


def accepted_class_at(path: str, line: int, source_class: str) -> str | None:
    """A copy of this source class (the runtime checker's or the trace's) accepted at path:line: by a comment
    naming one of the class's rules, the class itself, or every rule."""
    for code in [c for c, r in RULES.items() if r[1] == source_class] or ["H2D000"]:
        reason = accepted_at(path, line, code)
        if reason:
            return reason
    return None


# ------------------------------------------------------------------------------------------ the gate's sites
_SKIP = {".git", ".venv", "venv", "node_modules", "__pycache__", "site-packages", "build", "dist", ".tox"}


def find_source(tail: str, root: str, search: bool = True, _index: dict = {}) -> str | None:  # noqa: B006 (cache)
    """The file a trace names by its last two parts (`parent/file.py`, sites.py): root/tail, else (search) the one
    file under root whose path ends so (None when none or several). A name from a trace is untrusted: one that
    climbs out of root (`..`, absolute) is not read."""
    parts = tail.replace("\\", "/").split("/")
    if tail.startswith("/") or ".." in parts or ":" in tail[:3]:
        return None
    direct = os.path.join(root, tail)
    if os.path.isfile(direct):
        return direct
    if not search:
        return None
    key = os.path.abspath(root)
    if key not in _index:
        found: dict[str, list] = {}
        for d, dirs, files in os.walk(root):
            dirs[:] = [x for x in dirs if x not in _SKIP]
            for f in files:
                if f.endswith(".py"):
                    path = os.path.join(d, f)
                    found.setdefault("/".join(path.replace(os.sep, "/").split("/")[-2:]), []).append(path)
        _index[key] = found
    hits = _index[key].get(tail, [])
    return hits[0] if len(hits) == 1 else None


def accepted_site(site: str | None, site_line: str | None, source_class: str, root: str,
                  search: bool = True) -> str | None:
    """A trace's copy accepted in source: the comment on its line (`parent/file.py:N`), else one inside the function
    the trace names (`parent/file.py:function`; a trace's line numbers go stale when the file changes, its
    functions do not): any comment there that covers the copy's class accepts the function's copies of it."""
    m = re.fullmatch(r"(.+\.py):(\d+)", site_line or "")
    path = find_source(m.group(1), root, search) if m else None
    if path is not None:
        reason = accepted_class_at(path, int(m.group(2)), source_class)
        if reason:
            return reason
    m = re.fullmatch(r"(.+\.py):([\w.<>]+)", site or "")
    path = find_source(m.group(1), root, search) if m else None
    if path is None:
        return None
    linecache.checkcache(path)
    lines = linecache.getlines(path)
    try:
        tree = ast.parse("".join(lines))
    except (SyntaxError, ValueError):
        return None
    name = m.group(2).rsplit(".", 1)[-1]
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == name:
            for i in range(fn.lineno, fn.end_lineno + 1):
                reason = accepted_class_at(path, i, source_class)
                if reason:
                    return reason
    return None
