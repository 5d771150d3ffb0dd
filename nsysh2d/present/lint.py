"""What `nsysh2d lint` prints: ruff-style lines, its JSON document, SARIF 2.1.0 (GitHub code scanning) and GitHub
annotations. File paths, source snippets, the source text quoted in messages and the reasons of suppressions are
the checkout's (in CI, the pull request author's): each goes through safe.py for the output it reaches."""
from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from .. import __version__
from . import safe
from .render import to_json
from .views import View

LEVELS = {"error": "error", "warning": "warning"}   # SARIF levels of the rule table's levels


@dataclass
class LintView(View):
    result: object   # static.LintResult
    rules: dict      # fixes.RULES

    def document(self) -> dict:
        r = self.result
        return {"lint": {"files": r.files, "parsed": r.parsed, "findings": [f.to_json() for f in r.findings],
                         "accepted": [f.to_json() for f in r.accepted],
                         "errors": [{"path": p, "error": m} for p, m in r.errors],
                         "rules": {c: {"name": n, "source_class": k, "level": lv, "fix": fx}
                                   for c, (n, k, lv, fx) in self.rules.items()}}}

    def text(self, fmt: str) -> str:
        if fmt == "sarif":
            return to_json(self.sarif())
        if fmt == "github":
            return self.annotations()
        return self.lines()

    # ------------------------------------------------------------------------------------------ ruff-style
    def lines(self) -> str:
        t, r = safe.terminal, self.result
        out = [f"{t(f.path)}:{f.line}:{f.col}: {f.code} [{f.source_class or 'suppression'}] {t(f.message)}"
               for f in r.findings]
        codes = dict.fromkeys(f.code for f in r.findings)
        out += [f"  fix {c} ({self.rules[c][0]}): {self.rules[c][3]}" for c in codes]
        if r.accepted:
            out.append(f"accepted in source ({len(r.accepted)}):")
            out += [f"  {t(f.path)}:{f.line}:{f.col}: {f.code} accepted: {t(f.accepted)}" for f in r.accepted]
        unread = f", {len(r.errors)} could not be read or parsed" if r.errors else ""
        out.append(f"{len(r.findings)} finding(s), {len(r.accepted)} accepted, in {r.files} file(s){unread}")
        return "\n".join(out) + "\n"

    # ------------------------------------------------------------------------------------------ GitHub
    def annotations(self) -> str:
        """One workflow command per line: properties and messages in the runner's own escapes."""
        prop, data, t = safe.annotation_property, safe.annotation_data, safe.terminal
        out = []
        for f in self.result.findings:
            kind = "warning" if f.level == "warning" else "error"
            out.append(f"::{kind} file={prop(f.path)},line={f.line},col={f.col},endLine={f.end_line},"
                       f"title={prop(f'nsysh2d {f.code} {f.rule}')}::{data(t(f.message) + chr(10) + 'fix: ' + f.fix)}")
        for f in self.result.accepted:
            out.append(f"::notice file={prop(f.path)},line={f.line},title={prop(f'nsysh2d {f.code} accepted')}::"
                       f"{data('accepted in source: ' + t(f.accepted))}")
        for p, m in self.result.errors:
            out.append(f"::error file={prop(p)},title=nsysh2d lint::{data(t(m))}")
        return "\n".join(out) + ("\n" if out else "")

    # ------------------------------------------------------------------------------------------ SARIF
    def sarif(self) -> dict:
        codes = list(self.rules)
        rules = [{"id": c, "name": n, "shortDescription": {"text": f"{n} ({k or 'suppression'})"},
                  "help": {"text": fx}, "defaultConfiguration": {"level": LEVELS[lv]},
                  "properties": {"source_class": k}} for c, (n, k, lv, fx) in self.rules.items()]
        results = [self._result(f, codes) for f in self.result.findings + self.result.accepted]
        notes = [{"level": "error", "message": {"text": safe.terminal(m)},
                  "locations": [_location(p, None)]} for p, m in self.result.errors]
        return {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
                "runs": [{"tool": {"driver": {"name": "nsysh2d", "version": __version__, "semanticVersion": __version__,
                                              "rules": rules}},
                          "columnKind": "unicodeCodePoints",
                          "invocations": [{"executionSuccessful": not self.result.errors,
                                           "toolExecutionNotifications": notes}],
                          "results": results}]}

    def _result(self, f, codes) -> dict:
        res = {"ruleId": f.code, "ruleIndex": codes.index(f.code), "level": LEVELS[f.level],
               "message": {"text": f"{safe.terminal(f.message)}. Fix: {f.fix}"},
               "locations": [_location(f.path, f)],
               "partialFingerprints": {"nsysh2dSnippet/v1": f"{f.code}:{safe.terminal(f.snippet)}"}}
        if f.accepted:
            res["suppressions"] = [{"kind": "inSource", "justification": safe.terminal(f.accepted)}]
        return res


def _location(path: str, f) -> dict:
    loc = {"artifactLocation": {"uri": quote(path.replace("\\", "/").removeprefix("./"), safe="/")}}
    if f is not None:
        loc["region"] = {"startLine": f.line, "startColumn": f.col, "endLine": max(f.end_line, f.line)}
    return {"physicalLocation": loc}
