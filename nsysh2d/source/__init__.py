"""Source layer: find and check files, export .nsys-rep reports, detect the schema, read the big tables,
run the named SQL. Everything above it sees the normalized views `n.*` (schema.py), never raw tables."""


def __getattr__(name):
    # Trace imports DuckDB (~40 ms): a report served from the cache, which only needs source.sql's file
    # digest, must not pay for it.
    if name in ("Trace", "open_input"):
        from . import trace   # lazy: the reason above
        return getattr(trace, name)
    raise AttributeError(name)
