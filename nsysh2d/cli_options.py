"""Options several commands share that set the environment their analyses read (issue 56): -q after the command,
--source-root; and --steady-after. Kept apart from cli_kit.py (its size)."""
from __future__ import annotations

import os

import click

from .quiet import quiet_option


class QuietGroup(click.Group):
    """A group whose every command also takes -q/--quiet after its name (a user types it there as often)."""

    def add_command(self, cmd, name=None) -> None:
        if not any(p.name == "quiet" for p in cmd.params):
            quiet_option(cmd)
        super().add_command(cmd, name)


def _source_root(ctx, _param, value):
    """Kineto files named relative to a sys.path entry are looked up here (sites.resolve reads the variable, in
    this process and in the pool workers it starts)."""
    if value:
        if not os.path.isdir(value):
            raise click.BadParameter(f"{value!r} is not a folder")
        os.environ["NSYSH2D_SOURCE_ROOT"] = os.path.realpath(value)
    return value


source_root_option = click.option(
    "--source-root", metavar="DIR", callback=_source_root, expose_value=False, is_eager=True,
    help="Kineto traces: where the files of call sites are looked for, to name them by their path in the "
         "repository (torch names them relative to a sys.path entry).  [default: the current folder]")

steady_after_option = click.option(
    "--steady-after", metavar="WHEN",
    help="Judge the steady state only: leave out the copies whose call starts before WHEN: a time after the first "
         "API call (2s), the first range of a name (range:NAME), or, in a torch.profiler trace, the first CPU op or "
         "Python function of a name (op:NAME). For traces without step ranges; reports say what was left out.")
