"""Copies the gate would count that the source accepts: `# nsysh2d: ok[RULE] <reason>` on the copy's line (or in
the function the trace names), read from the files under --source-root (nsysh2d/rules/allowlist.py, shared with lint and
the runtime checker)."""
from __future__ import annotations

import os

from ..rules.allowlist import accepted_site
from .rules import Rules


def split_accepted(offenders: list[dict], rules: Rules) -> tuple[list[dict], list[dict]]:
    """Offending copies whose source line (or function) says `# nsysh2d: ok[RULE] <reason>` are accepted: taken
    out of the count and listed with their reason (nsysh2d/rules/allowlist.py; the files under --source-root or here)."""

    given = os.environ.get("NSYSH2D_SOURCE_ROOT") or rules.source_root   # --source-root, else pyproject
    root, out, acc = given or os.getcwd(), [], []
    for o in offenders:
        reason = accepted_site(o.get("site"), o.get("site_line"), o.get("source_class") or "", root,
                               search=given is not None)   # the current folder: no walk through it
        (acc if reason else out).append({**o, "accepted": reason} if reason else o)
    return out, acc


def accepted_words(accepted: list[dict], subtracted: int) -> str:
    if not accepted:
        return ""
    sites = dict.fromkeys(f"{o.get('site_line') or o.get('site')} ({o['accepted']})" for o in accepted)
    how = "not counted" if subtracted else "still counted: they ran during warm-up steps or were not judged"
    return f"; {len(accepted)} accepted in source ({how}): {', '.join(sites)}"
