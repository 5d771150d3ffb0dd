"""nsysh2d: find, explain and gate long-blocking host-to-device copies in Nsight Systems traces."""

__version__ = "0.1.0"


def open(path, **kwargs):  # noqa: A001 - the library's entry point reads like the builtin on purpose
    """Open an nsys SQLite export, a .nsys-rep or a torch.profiler (Kineto) trace, read-only, for analysis.

    Returns an `nsysh2d.analysis.Analysis` with one method per analysis: `.copies()` (polars, one row per copy
    call), `.result(Options(...))` / `.report(...)` (the Report, typed / as the JSON contract), `.by_group(...)`,
    `.top(...)`, `.threshold()`, `.api_summary()`, `.range_times()`; `.trace` (the DuckDB views). The file is
    read by the first method that needs it. kwargs: nsys, use_cache, threads.
    """
    from .analysis import Analysis   # lazy: `import nsysh2d` (the CLI, profiling) must not load DuckDB

    return Analysis.open(path, **kwargs)
