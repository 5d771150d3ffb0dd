"""The one rule set shared by the trace, the runtime checker and the static check: the rules and their fix texts
(fixes.py), the allowlist that accepts a copy by rule and site (allowlist.py), and call-site names (sites.py)."""
