"""Options several commands share that set the environment their analyses read (issue 56): -q after the command,
--source-root; and --steady-after; and `profile`'s options. Kept apart from cli_kit.py (its size)."""
from __future__ import annotations

import os
import sys

import click

from .quiet import env_for_command, quiet_option


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
        env_for_command(ctx, "NSYSH2D_SOURCE_ROOT", os.path.realpath(value))   # no leak into in-process callers
    return value


source_root_option = click.option(
    "--source-root", metavar="DIR", callback=_source_root, expose_value=False, is_eager=True,
    help="Where the traced program's source is: Kineto call sites are named by their path there (torch names them "
         "relative to a sys.path entry), and the gate accepts a copy whose line there says `# nsysh2d: ok[RULE] "
         "<reason>`.  [default: the current folder]")

steady_after_option = click.option(
    "--steady-after", metavar="WHEN",
    help="Judge the steady state only: leave out the copies whose call starts before WHEN: a time after the first "
         "API call (2s), the first range of a name (range:NAME), or, in a torch.profiler trace, the first CPU op or "
         "Python function of a name (op:NAME). For traces without step ranges; reports say what was left out.")


profile_options_list = [
    click.option("-o", "--output-dir", default="nsysh2d-out", show_default=True, type=click.Path(file_okay=False),
                 help="Folder for reports, SQLite exports and logs."),
    click.option("--name", help="Base name of the outputs (default: the workload's file name)."),
    click.option("--variants", default=None,
                 help="Comma-separated values passed as --variant, one capture each. Default: the workload's "
                      "own --variant choices (before,after), or none for a plain command."),
    click.option("--no-variants", is_flag=True, help="Capture once, without --variant."),
    click.option("--nsys", "nsys_path", help="nsys binary (default: $NSYS, PATH, the usual install folders)."),
    click.option("--trace", default="cuda,nvtx", show_default=True, help="nsys --trace."),
    click.option("--cudabacktrace", default="none", show_default=True,
                 help="nsys --cudabacktrace; 'memory': native stacks of memory calls (tells a strided view of pinned "
                      "memory from pageable, names native call sites). Needs CPU sampling, which nsys then does: "
                      "on qwen3vl (4 steps, H100) 12 s and 2 MB raw without, 115-120 s and 2.26 GB raw with."),
    click.option("--sample", default="none", show_default=True,
                 help="nsys --sample; turned on (process-tree) when backtraces are asked for."),
    click.option("--python-backtrace", is_flag=True,
                 help="Also record Python stacks of CUDA calls (Python call sites); costs CPU sampling as above."),
    click.option("--nsys-arg", "nsys_args", multiple=True, help="Extra argument for nsys profile (repeatable)."),
    click.option("--export-arg", "export_args", multiple=True, help="Extra argument for nsys export (repeatable)."),
    click.option("--importer-lib", help="Folder added to LD_LIBRARY_PATH when finishing a .qdstrm import."),
    click.option("--python", "python_exe", default=sys.executable, show_default="this interpreter",
                 help="Interpreter that runs a .py workload."),
    click.option("--dry-run", is_flag=True, help="Print the nsys commands without running them."),
    click.option("--sites/--no-sites", default=True, show_default=True,
                 help="Run a .py workload under nsysh2d's copy hook: every copy from CPU memory to a GPU made through "
                      "PyTorch gets an NVTX range naming its call line and source class (pageable, pinned_strided, "
                      "file_backed, ...), so the report has them without CPU sampling or backtraces."),
    click.option("--kineto", is_flag=True,
                 help="Capture with torch.profiler instead of nsys (no nsys needed): CPU+CUDA activity with Python "
                      "stacks, NVTX ranges mirrored as record_function ranges; writes NAME.pt.trace.json.gz, which "
                      "every command reads. The nsys options do not apply."),
]


def profile_options(f):
    for opt in reversed(profile_options_list):
        f = opt(f)
    return f
