"""Source layer: find and check files, export .nsys-rep reports, detect the schema, read the big tables,
run the named SQL. Everything above it sees the normalized views `n.*` (schema.py), never raw tables."""
from .trace import Trace  # noqa: F401
