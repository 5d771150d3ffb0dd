"""Units and formatting: light enough for the warm (cached) path, which loads no DuckDB."""
from __future__ import annotations

import re

from .errors import BadInput

_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


def parse_duration(text: str) -> int:
    """'100us', '1.5ms', '250000ns', '2s' -> nanoseconds. A bare number is nanoseconds."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(ns|us|µs|ms|s)?\s*", str(text))
    if not m:
        raise BadInput(f"bad duration {text!r}: use a number with ns, us or ms (e.g. 100us)")
    return int(round(float(m.group(1)) * _UNITS[m.group(2) or "ns"]))


def parse_fraction(text) -> float:
    """'10%' or '0.1' -> 0.1."""
    t = str(text).strip()
    try:
        return float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise BadInput(f"bad --tolerance {text!r}: use e.g. 10% or 0.1") from None


def format_ns(ns) -> str:
    if ns is None:
        return "-"
    ns = float(ns)
    if abs(ns) >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if abs(ns) >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if abs(ns) >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns:.0f} ns"


def format_bytes(n) -> str:
    if n is None:
        return "-"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"
