"""--quiet: no progress and no notes on stderr; errors still say why. Set as NSYSH2D_QUIET, which the places
that write progress or notes read (run.py, source/kineto.py, torch_profile.py) and subprocesses inherit."""
from __future__ import annotations

import os

import click


def env_for_command(ctx, name: str, value: str) -> None:
    """Set an environment variable for the command `ctx` runs (subprocesses inherit it) and put the old value back
    when it ends: an in-process caller's (the API, a test suite) later commands do not inherit it."""
    before = os.environ.get(name)
    os.environ[name] = value

    def restore() -> None:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before

    ctx.call_on_close(restore)


def set_quiet(ctx, _param, value) -> None:
    """-q's callback (the option: cli/options.py)."""
    if value:   # read where progress and notes are written (run.py, kineto.py, profile)
        env_for_command(ctx, "NSYSH2D_QUIET", "1")


def quiet() -> bool:
    return os.environ.get("NSYSH2D_QUIET", "") not in ("", "0")


def note(message: str, err: bool = False) -> None:
    """click.echo, but what goes to stderr (notes, progress lines) is left out with --quiet."""
    if not (err and quiet()):
        click.echo(message, err=err)
