"""Units and formatting: light enough for the warm (cached) path, which loads no DuckDB."""
from __future__ import annotations

import re

from .errors import BadInput

MAX_NS = 2.0 ** 62   # the timestamps' own bound (source/schema.py TIME_LIMIT)
_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


def parse_duration(text) -> int:
    """'100us', '1 ms', '1.5ms', '250000ns', '2s' -> nanoseconds. A number needs its unit (only 0 may go
    without): a bare '100' meant 100 ns to some and 100 us to others."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(ns|us|µs|ms|s)?\s*", str(text))
    if not m or isinstance(text, bool):
        raise BadInput(f"bad duration {text!r}: use a number with ns, us, ms or s (e.g. 100us, 1 ms)")
    if m.group(2) is None and float(m.group(1)) != 0:
        raise BadInput(f"bad duration {text!r}: give its unit, e.g. '{m.group(1)}us' or '{m.group(1)}ms'")
    ns = float(m.group(1)) * _UNITS[m.group(2) or "ns"]
    if not ns < MAX_NS:   # thousands of digits read as inf; a span of 146 years is no setting
        raise BadInput(f"bad duration {str(text)[:40]!r}: at most 2^62 ns (146 years)")
    return int(round(ns))


def parse_fraction(text) -> float:
    """'10%' or '0.1' -> 0.1; a bare number above 1 is refused ('10' would mean 1000%)."""
    t = str(text).strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise BadInput(f"bad --tolerance {text!r}: use e.g. 10% or 0.1") from None
    if isinstance(text, bool) or not 0 <= value < float("inf"):
        raise BadInput(f"bad --tolerance {text!r}: a growth allowance is 0% or more (e.g. 10% or 0.1)")
    if not t.endswith("%") and value > 1:
        raise BadInput(f"bad --tolerance {text!r}: as a fraction that is {value * 100:g}%; write {t}% if you "
                       "mean that many percent")
    return value


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


def plural(n: int, noun: str) -> str:
    """`1 call site`, `2 call sites`, `3 source classes`: a count and its noun (the last word made plural)."""
    if n == 1:
        return f"{n} {noun}"
    if noun.endswith("y") and not noun.endswith(("ay", "ey", "oy")):
        return f"{n} {noun[:-1]}ies"
    return f"{n} {noun}es" if noun.endswith(("s", "x", "ch", "sh")) else f"{n} {noun}s"
