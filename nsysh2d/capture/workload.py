"""A workload script's `--variant` choices, read from its source (what `nsysh2d profile` captures one by one)."""
from __future__ import annotations

import re
from pathlib import Path


def workload_variants(script: str) -> list[str]:
    """The values of a workload's `--variant` option, read from its source without running it
    (running it would import torch and take seconds)."""
    try:
        text = Path(script).read_text(errors="replace")
    except OSError:
        return []
    if not re.search(r"[\"']--variant[\"']", text):  # the option itself, not e.g. --variants
        return []
    m = re.search(r"--variant[\"'][^)]*?choices\s*=\s*[\[(]([^\])]*)[\])]", text, re.S)
    if m:
        names = re.findall(r"[\"']([\w.-]+)[\"']", m.group(1))
        if names:
            return names
    return ["before", "after"]
