"""Every click option more than one command takes, declared once (issue 55): a command lists the ones it takes
by name, so --nsys, --format or -o mean and read the same everywhere. An option of one command only is declared
at that command. tests/test_architecture.py checks that no flag is declared twice."""
from __future__ import annotations

import os
import sys

import click

from ..analyses.options import CALLS, DEFAULT_STEP_PATTERN, DIRECTIONS
from ..errors import NsysH2DError
from ..units import parse_duration
from .quiet import env_for_command, set_quiet

FORMATS = ["table", "json", "csv", "markdown"]
REPORT_FORMATS = FORMATS + ["html"]   # analyze, compare, threshold: a self-contained page (present/html.py)


def duration(_ctx, _param, value):
    """A duration option's value (100us, 1ms, 2s) in ns, or click's one-line usage error."""
    try:
        return parse_duration(value) if value is not None else None
    except NsysH2DError as e:
        raise click.BadParameter(str(e)) from None


def _source_root(ctx, _param, value):
    """Kineto files named relative to a sys.path entry are looked up here (sites.resolve reads the variable, in
    this process and in the pool workers it starts)."""
    if value:
        if not os.path.isdir(value):
            raise click.BadParameter(f"{value!r} is not a folder")
        env_for_command(ctx, "NSYSH2D_SOURCE_ROOT", os.path.realpath(value))   # no leak into in-process callers
    return value


# ----------------------------------------------------------------------------------------- factories
# Options whose wording names what the command does with them (its format list, what -o receives, its section).

def format_option(choices=REPORT_FORMATS, default="table", help=None):
    return click.option("--format", "fmt", type=click.Choice(choices, case_sensitive=False), default=default,
                        show_default=True, help=help)


def output_option(help="Write here (atomically) instead of stdout.", required=False, folder=False):
    """-o: where the output goes: a file (--output), or for `profile` a folder of them (--output-dir)."""
    kind = dict(default="nsysh2d-out", show_default=True, type=click.Path(file_okay=False)) if folder else \
        dict(required=required, type=click.Path(dir_okay=False))
    return click.option("-o", "--output-dir" if folder else "--output", help=help, **kind)


def nsys_option(help="nsys binary used to export .nsys-rep inputs.", metavar=None):
    return click.option("--nsys", "nsys_path", metavar=metavar, help=help)


def config_option(section: str):
    return click.option("--config", "config_path", type=click.Path(dir_okay=False),
                        help=f"pyproject.toml with [tool.nsysh2d.{section}] (default: the nearest one).")


# ----------------------------------------------------------------------------------------- shared as they are
quiet_option = click.option("-q", "--quiet", is_flag=True, expose_value=False, is_eager=True, callback=set_quiet,
                            help="No progress and no notes on stderr (errors still say why); before or after the "
                                 "command: nsysh2d -q analyze ..., nsysh2d analyze -q ...")

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

min_duration_option = click.option(
    "--min-duration", default="100us", show_default=True, callback=duration,
    help="A call is long when its host-side duration is at least this (ns, us, ms).")

step_pattern_option = click.option(
    "--step-pattern", default=DEFAULT_STEP_PATTERN, show_default=True,
    help="Regular expression naming the NVTX ranges that mark one step (per-step figures). With the default and no "
         "such range, torch.profiler's ProfilerStep#N ranges are the steps.")

direction_option = click.option("--direction", type=click.Choice(DIRECTIONS, case_sensitive=False), default="h2d",
                                show_default=True, help="Which copies to report.")

calls_option = click.option(
    "--calls", type=click.Choice(CALLS, case_sensitive=False), default="async", show_default=True,
    help="Which copy APIs count: async (cudaMemcpyAsync, cuMemcpyHtoDAsync: should not block), sync (cudaMemcpy, "
         "cuMemcpyHtoD: block by definition) or all. The per-API table always shows both.")

jobs_option = click.option("-j", "--jobs", type=click.IntRange(1),
                           help="Reports analyzed in parallel (default: the CPUs this process may use).")

no_cache_option = click.option("--no-cache", is_flag=True,
                               help="Neither read nor write the cache (a .nsys-rep is exported anew).")

scheduler_option = click.option(
    "--scheduler", envvar="NSYSH2D_SCHEDULER", metavar="ADDRESS",
    help="Analyze the reports on a Dask cluster: its scheduler's address (tcp://host:8786; workers must have "
         "nsysh2d installed and see the report paths) or 'local' for a LocalCluster here. Also "
         "$NSYSH2D_SCHEDULER (never a project file). Needs pip install 'nsysh2d[dask]'.")

csv_table_option = click.option(
    "--csv-table", type=click.Choice(["groups", "totals", "calls"], case_sensitive=False), default="groups",
    show_default=True, help="With --format csv: the --by groups, one row of totals per report, or the longest calls "
                            "(as many as --top) with every column of the JSON's top list.")


def bundle(*options):
    """Several options as one decorator, in the order --help lists them."""
    def apply(f):
        for opt in reversed(options):
            f = opt(f)
        return f
    return apply


# analyze and compare: what a report is computed with, and where it goes.
report_options = bundle(
    min_duration_option, direction_option, calls_option,
    format_option(help="html: one self-contained page with plots (use with -o FILE.html)."), output_option(),
    step_pattern_option, nsys_option(), scheduler_option, source_root_option, steady_after_option)


# The options of `profile` (capture/nsys.py does the work; profiling never imports duckdb or polars).
profile_options = bundle(
    output_option("Folder for reports, SQLite exports and logs.", folder=True),
    click.option("--name", help="Base name of the outputs (default: the workload's file name)."),
    click.option("--variants", default=None,
                 help="Comma-separated values passed as --variant, one capture each. Default: the workload's "
                      "own --variant choices (before,after), or none for a plain command."),
    click.option("--no-variants", is_flag=True, help="Capture once, without --variant."),
    nsys_option("nsys binary (default: $NSYS, PATH, the usual install folders)."),
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
)
