"""The click plumbing of the CLI: every error as one line and a documented exit code, a command that never writes
over its inputs, output to stdout or a file. The options: options.py."""
from __future__ import annotations

import os
import signal
import sys

import click

from ..errors import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_OUTPUT_UNWRITABLE, NsysH2DError
from .options import quiet_option
from .quiet import note  # noqa: F401 (commands import it from here with emit)


def error_line(message: str) -> str:
    """One line on stderr whatever the message holds (a file name may contain a newline or escapes)."""
    from ..present.safe import terminal   # lazy: --help stays fast

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
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise NsysH2DError("interrupted", 130) from None


class Group(click.Group):
    """Turns every error into one line on stderr and a documented exit code; every command also takes -q/--quiet
    after its name (a user types it there as often)."""

    command_class = Command

    def add_command(self, cmd, name=None) -> None:
        if not any(p.name == "quiet" for p in cmd.params):
            quiet_option(cmd)
        super().add_command(cmd, name)

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
                from ..source.connection import memory_limit   # lazy: imports duckdb
                fail(f"out of memory (DuckDB limit {memory_limit()}; raise it with NSYSH2D_MEMORY_LIMIT=4GB "
                      "or use fewer threads with NSYSH2D_THREADS=2)", EXIT_INTERNAL)
            fail(f"internal error: {type(e).__name__}: {e} (set NSYSH2D_DEBUG=1 for a traceback and "
                  "please report it)", EXIT_INTERNAL)


def emit(text: str, output: str | None = None, commands: bool = False) -> None:
    """A command's output to stdout or a file. No line of it can be a CI runner's command (present/safe.py),
    unless `commands`: the gate's own annotations, built by present/ci.py."""
    from ..present.safe import log_lines   # lazy: --help stays fast

    if not commands:
        text = log_lines(text)
    if output:
        from ..cache import write_output   # lazy: --help stays fast (hashlib, tempfile: 10 ms)

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
