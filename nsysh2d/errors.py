"""Exit codes and the one exception type the CLI turns into a one-line message.

Kept free of heavy imports: the profiling path uses it on bare GPU boxes.
"""
import re

EXIT_OK = 0
EXIT_REGRESSION = 1        # gate: a rule failed
EXIT_BAD_INPUT = 2         # bad input file or usage
EXIT_NSYS_MISSING = 3      # no nsys CLI where one is needed
EXIT_WORKLOAD_FAILED = 4   # profile: the workload (or nsys profile) exited non-zero
EXIT_EXPORT_FAILED = 5     # profile/analyze: import or export of a report failed
EXIT_OUTPUT_UNWRITABLE = 6 # an output folder or file cannot be written
EXIT_INTERNAL = 70         # a bug in nsysh2d (message asks for a report)


class NsysH2DError(Exception):
    """An error with a one-line message and the exit code it maps to."""

    def __init__(self, message: str, exit_code: int = EXIT_BAD_INPUT):
        super().__init__(message)
        self.exit_code = exit_code


class BadInput(NsysH2DError):
    def __init__(self, message: str):
        super().__init__(message, EXIT_BAD_INPUT)


def first_line(e: Exception, limit: int = 300) -> str:
    """The first line of an exception's text, whitespace collapsed: for one-line error messages."""
    lines = str(e).strip().splitlines()
    return re.sub(r"\s+", " ", lines[0])[:limit] if lines else type(e).__name__
