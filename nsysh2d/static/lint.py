"""`nsysh2d lint`: which files, read once; which of them can hold a finding; the two passes; suppressions.

Pass 1 reads the classes of every file that mentions `pin_memory`: what their `self.X = ...` make, so that an
attribute pinned in one class (`self.cpu = torch.zeros(..., pin_memory=True)`) is known pinned wherever `.cpu` of
that name is read. Pass 2 runs the data flow (flow.py) over every function of each file that mentions a copy
(`non_blocking`, or a device tensor built from data). A file with neither is not parsed at all: it cannot hold a
finding. Only the standard library (ast) is used: no torch, no DuckDB, no polars.
"""
from __future__ import annotations

import fnmatch
import os
from dataclasses import asdict, dataclass, field

from ..cpus import usable_cpus
from ..errors import BadInput
from ..rules.allowlist import accepted, comments, mark, unknown_rules
from ..rules.fixes import RULES
from .flow import Hit
from .passes import copies, run_passes

OPT_IN = {"H2D005"}
SKIP_DIRS = {".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__", "build", "dist", "node_modules",
             "site-packages", ".eggs", ".mypy_cache", ".ruff_cache", ".pytest_cache"}


@dataclass
class Settings:
    include: list = field(default_factory=lambda: ["*.py"])
    exclude: list = field(default_factory=list)
    # H2D005 (a synchronous build of a device tensor from host data) is opt-in: most such calls in a large code
    # base are one-time set-up the text cannot tell from a step (docs/lint.md, "Precision").
    select: list = field(default_factory=lambda: sorted(set(RULES) - OPT_IN))
    ignore: list = field(default_factory=list)
    accept_inside: list = field(default_factory=list)   # context managers whose body the project accepts
    root: str = "."   # exclude patterns are relative to this folder (the settings file's, else the current one)
    project: str | None = None   # the settings file's folder: pass 1 also reads its files (see lint)

    @classmethod
    def from_config(cls, section: dict, config_path, select=(), ignore=()) -> "Settings":
        """[tool.nsysh2d.lint] with --select/--ignore over it (the command line wins); bad rule names: BadInput."""

        s = cls(**{k.replace("-", "_"): list(v) for k, v in section.items()})
        s.root = os.path.dirname(os.path.abspath(config_path)) if config_path else os.getcwd()
        s.project = s.root if config_path else None
        s.select = list(select) or s.select
        s.ignore = s.ignore + list(ignore)
        try:
            s.codes()
        except ValueError as e:
            raise BadInput(f"{config_path or 'lint'}: {e}") from None
        return s

    def rel(self, path: str) -> str:
        return os.path.relpath(os.path.abspath(path), self.root)

    def codes(self) -> set[str]:
        return {rule_code(r) for r in self.select} - {rule_code(r) for r in self.ignore}


def rule_code(name: str) -> str:
    """H2D001, or a rule's name (pageable-non-blocking) -> its code; ValueError for anything else."""
    for code, (rname, *_rest) in RULES.items():
        if name.upper() == code or name.lower() == rname:
            return code
    if name.upper() == "ALL":
        return "ALL"
    raise ValueError(f"unknown rule {name!r} (rules: {', '.join(RULES)})")


@dataclass
class Finding:
    path: str
    line: int
    col: int
    end_line: int
    code: str
    rule: str
    source_class: str
    level: str
    message: str
    fix: str
    snippet: str
    accepted: str | None = None   # the reason given in the source, when the site is accepted there

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class LintResult:
    findings: list[Finding]
    accepted: list[Finding]
    errors: list[tuple[str, str]]   # (path, problem): files that could not be read or parsed
    files: int
    parsed: int

    @property
    def exit_code(self) -> int:
        return 2 if self.errors else 1 if self.findings else 0


def excluded(rel: str, patterns) -> bool:
    parts = rel.replace(os.sep, "/").split("/")
    for pat in patterns:
        pat = pat.rstrip("/")
        if "/" in pat:
            if any(fnmatch.fnmatch("/".join(parts[:i]), pat) for i in range(1, len(parts) + 1)):
                return True
        elif any(fnmatch.fnmatch(p, pat) for p in parts):
            return True
    return False


def python_files(paths, settings: Settings) -> tuple[list[str], list[tuple[str, str]]]:
    """The files to read: each PATH that is a file, and under each folder those matching include; exclude applies
    to both (so that pre-commit, which names files, honours it)."""
    out, errors = [], []
    for p in paths:
        if os.path.isfile(p):
            if not excluded(settings.rel(p), settings.exclude):
                out.append(p)
        elif os.path.isdir(p):
            for d, dirs, files in os.walk(p):
                rel_d = settings.rel(d)
                dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not excluded(os.path.join(rel_d, x),
                                                                                       settings.exclude))
                for f in sorted(files):
                    rel = os.path.normpath(os.path.join(rel_d, f))
                    if any(fnmatch.fnmatch(f, i) or fnmatch.fnmatch(rel, i) for i in settings.include) \
                            and not excluded(rel, settings.exclude):
                        out.append(os.path.join(d, f))
        else:
            errors.append((p, "no such file or folder"))
    return out, errors


def lint(paths, settings: Settings | None = None) -> LintResult:
    settings = settings or Settings()
    codes = settings.codes()
    if "ALL" in codes:
        codes = set(RULES)
    files, errors = python_files(paths, settings)
    texts = {}
    for f in files:
        try:
            with open(f, "rb") as fh:
                texts[f] = fh.read().decode("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            errors.append((f, f"cannot read ({getattr(e, 'strerror', None) or e})"))
    jobs = {f: t for f, t in texts.items() if "pin_memory" in t or copies(t)}
    hits_of, parse_errors = run_passes(jobs, project_texts(settings, texts), usable_cpus(),
                                       frozenset(settings.accept_inside))
    errors += sorted(parse_errors)
    found, acc = [], []
    for f, text in texts.items():
        hits = hits_of.get(f, [])
        if "nsysh2d" in text or "gpu-sync-ok" in text:
            hits += bare_marks(text)
        if not hits:
            continue
        lines = text.splitlines()
        for h in hits:
            if h.code not in codes:
                continue
            name, cls, level, fix = RULES[h.code]
            reason = (accepted(lines, h.line, h.end_line, h.code) or h.accepted) if h.code != "H2D000" else None
            line = lines[h.line - 1] if 0 < h.line <= len(lines) else ""
            # ast counts UTF-8 bytes; tokenize (H2D000) characters
            col = (h.col if h.code == "H2D000" else len(line.encode("utf-8")[:h.col].decode("utf-8", "ignore"))) + 1
            (acc if reason else found).append(Finding(f, h.line, col, h.end_line, h.code, name, cls, level,
                                                      h.message, fix, line.strip(), reason))
    key = lambda x: (x.path, x.line, x.col, x.code)   # noqa: E731
    return LintResult(sorted(found, key=key), sorted(acc, key=key), errors, len(texts), len(jobs))


def project_texts(settings: Settings, seen) -> dict[str, str]:
    """Pass 1 also reads the rest of the project when only some of its files are linted (pre-commit names the
    changed ones), so that a buffer class defined in a file not named is still known: the folder of its
    pyproject.toml, else the top package of each file named (the highest folder of `__init__.py`s above it)."""
    if settings.project is not None:
        if any(settings.rel(p).startswith("..") for p in seen):
            return {}   # files outside the project: its classes are not theirs
        roots = {settings.project}
    else:
        roots = set()
        for p in seen:
            d, top = os.path.dirname(os.path.abspath(p)), None
            while os.path.isfile(os.path.join(d, "__init__.py")) and os.path.dirname(d) != d:
                top, d = d, os.path.dirname(d)
            if top is not None:
                roots.add(top)
    mine = {os.path.abspath(p) for p in seen}
    out = {}
    for f in python_files(sorted(roots), settings)[0]:
        if os.path.abspath(f) in mine:
            continue
        try:
            with open(f, "rb") as fh:
                text = fh.read().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue   # not linted here: its own run reports it
        if "pin_memory" in text:
            out[f] = text
    return out


def bare_marks(text: str) -> list[Hit]:
    """Suppression comments that cannot accept anything: no reason, or a rule nsysh2d does not have."""
    out = []
    for line, col, comment in comments(text):
        m = mark(comment)
        if m is None:
            continue
        if not m.reason:
            out.append(Hit("H2D000", line, col, line, "suppression without a reason: it accepts nothing"))
        elif unknown_rules(m):
            out.append(Hit("H2D000", line, col, line, f"suppression of unknown rule(s) {', '.join(unknown_rules(m))}"))
    return out
