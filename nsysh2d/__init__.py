"""nsysh2d: find, explain and gate long-blocking host-to-device copies in Nsight Systems traces."""

__version__ = "0.1.0"


def open(path, **kwargs):  # noqa: A001 - the library's entry point reads like the builtin on purpose
    """Open an nsys SQLite export (or .nsys-rep) read-only; see nsysh2d.trace.Trace."""
    from .trace import Trace

    return Trace.open(path, **kwargs)
