"""The click plumbing of the CLI: every error as one line and a documented exit code, option bundles
shared by several commands, output to stdout or a file."""
from __future__ import annotations

import os
import sys

import click

from ..analyses.options import CALLS, DEFAULT_STEP_PATTERN, DIRECTIONS
from ..errors import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_OUTPUT_UNWRITABLE, NsysH2DError
from ..present.safe import log_lines, terminal   # what reaches a terminal or a CI log (docs/security.md)
from .options import QuietGroup, source_root_option, steady_after_option
from .quiet import note, quiet_option  # noqa: F401 (the CLI's options, kept with the rest)

FORMATS = ["table", "json", "csv", "markdown"]
REPORT_FORMATS = FORMATS + ["html"]   # analyze, compare, threshold: a self-contained page (present/html.py)


def error_line(message: str) -> str:
    """One line on stderr whatever the message holds (a file name may contain a newline or escapes)."""
    text = terminal(message)
    return "nsysh2d: error: " + "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in text)


def fail(message: str, code: int) -> None:
    click.echo(error_line(message), err=True)
    sys.exit(code)


INPUT_PARAMS = ("paths", "reports", "report", "before", "after", "traces", "sweep", "baseline", "config_path")
OUTPUT_PARAMS = {"output": "-o", "junit_path": "--junit", "summary_path": "--summary", "plot_path": "--plot"}


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


class Command(click.Command):
    """A command that never writes over one of its own inputs (-o run.sqlite for run.sqlite, or a link to it)."""

    def invoke(self, ctx):
        inputs = []
        for name in INPUT_PARAMS:
            v = ctx.params.get(name)
            inputs += [v] if isinstance(v, str) else list(v or ())
        for name, flag in OUTPUT_PARAMS.items():
            out = ctx.params.get(name)
            hit = next((i for i in inputs if out and _same_file(out, i)), None)
            if hit:
                raise NsysH2DError(f"{out}: {flag} names an input of this command ({hit}); refusing to overwrite it",
                                   EXIT_BAD_INPUT)
        return super().invoke(ctx)


def _is_interrupt(e: BaseException) -> bool:
    """Ctrl-C inside a DuckDB query, or inside its scan of the Arrow parts ("Query interrupted")."""
    return type(e).__name__ == "InterruptException" or "query interrupted" in str(e).lower()


def interrupted():
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise NsysH2DError("interrupted", 130) from None


class Group(QuietGroup):
    """Turns every error into one line on stderr and a documented exit code."""

    command_class = Command

    def invoke(self, ctx):
        # Ctrl-C is caught here, before click's main turns it into Abort after printing a blank line; a
        # second SIGINT (DuckDB's and Python's handlers, or the pool's workers) is ignored from then on.
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            interrupted()
        except Exception as e:
            if _is_interrupt(e):
                interrupted()
            raise

    def main(self, *args, **kwargs):
        import signal

        def on_sigint(_sig, _frame):   # once: later ones (DuckDB's threads, pool workers) are ignored
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            raise KeyboardInterrupt

        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, on_sigint)
        kwargs["standalone_mode"] = False
        try:
            rv = super().main(*args, **kwargs)
            sys.exit(rv if isinstance(rv, int) else 0)
        except NsysH2DError as e:
            fail(str(e), e.exit_code)
        except click.exceptions.Abort:
            fail("interrupted", 130)
        except click.ClickException as e:
            # Usage errors: click's own one-line message, our exit code for bad input.
            msg = e.format_message()
            ctx = getattr(e, "ctx", None)
            hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
            fail(msg + hint, EXIT_BAD_INPUT)
        except click.exceptions.Exit as e:
            sys.exit(e.exit_code)
        except KeyboardInterrupt:
            fail("interrupted", 130)
        except BrokenPipeError:
            sys.exit(0)
        except OSError as e:
            fail(f"{getattr(e, 'filename', '') or ''}: {e.strerror or e}".lstrip(": "), EXIT_BAD_INPUT)
        except Exception as e:  # a bug: say so in one line, keep the traceback behind a variable
            if os.environ.get("NSYSH2D_DEBUG"):
                raise
            if _is_interrupt(e):
                fail("interrupted", 130)
            if type(e).__name__ == "OutOfMemoryException":
                from ..source.connection import memory_limit
                fail(f"out of memory (DuckDB limit {memory_limit()}; raise it with NSYSH2D_MEMORY_LIMIT=4GB "
                      "or use fewer threads with NSYSH2D_THREADS=2)", EXIT_INTERNAL)
            fail(f"internal error: {type(e).__name__}: {e} (set NSYSH2D_DEBUG=1 for a traceback and "
                  "please report it)", EXIT_INTERNAL)




csv_table_option = click.option(
    "--csv-table", type=click.Choice(["groups", "totals", "calls"], case_sensitive=False), default="groups",
    show_default=True, help="With --format csv: the --by groups, one row of totals per report, or the longest calls "
                            "(as many as --top) with every column of the JSON's top list.")


def show_version(ctx, _param, value) -> None:
    """--version: nsysh2d, and what it runs with (read without importing DuckDB), and the nsys it would use."""
    if not value or ctx.resilient_parsing:
        return
    import platform
    import subprocess
    from importlib.metadata import PackageNotFoundError, version

    from .. import __version__
    from ..errors import NsysH2DError
    from ..capture.nsys import find_nsys

    def pkg(name):
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    try:
        exe = find_nsys()
        try:
            out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            out = "its version could not be read"
        nsys = f"{terminal(exe)} ({terminal(out.splitlines()[-1] if out else '?')})"
    except NsysH2DError:
        nsys = "not found (needed by profile and for .nsys-rep inputs; $NSYS or --nsys name one)"
    from ..source.ingest import compiled_reader

    ints = compiled_reader()
    reader = (f"compiled (SQLite {ints.sqlite_version})" if ints else
              f"ADBC {pkg('adbc-driver-sqlite')} (the compiled reader was not built or NSYSH2D_READER=adbc; see setup.py)")
    click.echo(f"nsysh2d {__version__}\nPython {platform.python_version()}\nDuckDB {pkg('duckdb')} (sqlite scanner "
               f"{pkg('duckdb-extension-sqlite-scanner')})\nreader of large tables: {reader}\nnsys: {nsys}")
    ctx.exit(0)


def duration(ctx, param, value):
    from ..units import parse_duration

    try:
        return parse_duration(value) if value is not None else None
    except NsysH2DError as e:
        raise click.BadParameter(str(e)) from None


def emit(text: str, output: str | None = None, commands: bool = False) -> None:
    """A command's output to stdout or a file. No line of it can be a CI runner's command (present/safe.py),
    unless `commands`: the gate's own annotations, built by present/ci.py."""
    if not commands:
        text = log_lines(text)
    if output:
        from ..cache import write_output

        write_output(output, text)
    else:
        # What -o writes, byte for byte: UTF-8 whatever the locale (a C locale would turn names into '?').
        out = sys.stdout
        if not hasattr(out, "buffer"):
            click.echo(text, nl=False, color=True)
            return
        try:
            out.flush()
            out.buffer.write(text.encode("utf-8"))
            out.buffer.flush()
        except BrokenPipeError:
            raise
        except OSError as e:   # a full disk behind a redirect (> /dev/full): say it was stdout
            try:   # what is still buffered would fail again at exit, with a second message
                os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
            except (OSError, ValueError):
                pass
            raise NsysH2DError(f"stdout: cannot write ({e.strerror or e})", EXIT_OUTPUT_UNWRITABLE) from None


def exit_code(errors) -> int:
    return max(c for _p, _m, c in errors) if errors else 0


direction_option = click.option("--direction", type=click.Choice(DIRECTIONS, case_sensitive=False), default="h2d",
                                show_default=True, help="Which copies to report.")
calls_option = click.option(
    "--calls", type=click.Choice(CALLS, case_sensitive=False), default="async", show_default=True,
    help="Which copy APIs count: async (cudaMemcpyAsync, cuMemcpyHtoDAsync: should not block), sync (cudaMemcpy, "
         "cuMemcpyHtoD: block by definition) or all. The per-API table always shows both.")

no_cache_option = click.option("--no-cache", is_flag=True,
                               help="Neither read nor write the cache (a .nsys-rep is exported anew).")

scheduler_option = click.option(
    "--scheduler", envvar="NSYSH2D_SCHEDULER", metavar="ADDRESS",
    help="Analyze the reports on a Dask cluster: its scheduler's address (tcp://host:8786; workers must have "
         "nsysh2d installed and see the report paths) or 'local' for a LocalCluster here. Also "
         "$NSYSH2D_SCHEDULER (never a project file). Needs pip install 'nsysh2d[dask]'.")

common_report_options = [
    click.option("--min-duration", default="100us", show_default=True, callback=duration,
                 help="A call is long when its host-side duration is at least this (ns, us, ms)."),
    direction_option,
    calls_option,
    click.option("--format", "fmt", type=click.Choice(REPORT_FORMATS, case_sensitive=False), default="table",
                 show_default=True, help="html: one self-contained page with plots (use with -o FILE.html)."),
    click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here (atomically) instead of stdout."),
    click.option("--step-pattern", default=DEFAULT_STEP_PATTERN, show_default=True,
                 help="Regular expression naming the NVTX ranges that mark one step (per-step figures). With the "
                      "default and no such range, torch.profiler's ProfilerStep#N ranges are the steps."),
    click.option("--nsys", "nsys_path", help="nsys binary used to export .nsys-rep inputs."),
    scheduler_option,
    source_root_option,
    steady_after_option,
]


def report_options(f):
    for opt in reversed(common_report_options):
        f = opt(f)
    return f


# The options of `profile` (nsys.py does the work; profiling never imports duckdb or polars).
version_option = click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=show_version,
                              help="Show nsysh2d's version, the Python, DuckDB and nsys it uses, and exit.")
