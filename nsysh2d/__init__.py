"""nsysh2d: find, explain and gate long-blocking host-to-device copies in Nsight Systems traces."""

__version__ = "0.1.0"


def open(path, **kwargs):  # noqa: A001 - the library's entry point reads like the builtin on purpose
    """Open an nsys SQLite export (or .nsys-rep) read-only and analyze it.

    Returns an `nsysh2d.analysis.Analysis`: `.copies()` (polars, one row per async memcpy call),
    `.report(Options(...))` (the JSON contract as a dict), `.by_group(...)`, `.trace` (the DuckDB views).
    """
    from .analysis import Analysis

    return Analysis.open(path, **kwargs)
