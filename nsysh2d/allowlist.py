"""The one allowlist of the three layers: a site accepted in its source line is accepted by `nsysh2d lint`, by the
runtime checker (`nsysh2d check`, the pytest plugin) and by `gate`, and each lists it as accepted with its reason.

    x_gpu.copy_(x_cpu, non_blocking=True)  # nsysh2d: ok[H2D001] tiny, once per request (#123)
    x_gpu.copy_(x_cpu, non_blocking=True)  # gpu-sync-ok: tiny, once per request      (vLLM's comment: any rule)

The bracket names rules by code (H2D001), name (pageable-non-blocking) or source class (pageable), comma-separated.
A reason is required: a comment without one accepts nothing, and lint reports it (H2D000).
Light: re, linecache and the rule table only (the runtime checker runs where only torch is installed)."""
from __future__ import annotations

import linecache
import re
from dataclasses import dataclass

from .fixes import RULES

_OK = re.compile(r"#\s*nsysh2d:\s*ok\[([^\]]*)\]\s*(.*)$", re.IGNORECASE)
_VLLM = re.compile(r"#\s*gpu-sync-ok\b:?\s*(.*)$", re.IGNORECASE)


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


def mark(line: str) -> Mark | None:
    """The suppression comment on a source line, if any."""
    if "nsysh2d" not in line and "gpu-sync-ok" not in line:
        return None
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
    for text in span + ([above] if above.startswith("#") else []):
        m = mark(text)
        if m is not None and m.reason and m.covers(code):
            return m.reason
    return None


def accepted_at(path: str, line: int, code: str) -> str | None:
    """The same for a file on disk at one line (the runtime checker's and the gate's sites); None when the file
    cannot be read."""
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
