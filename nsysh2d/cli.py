"""The `nsysh2d` command: a thin click layer over the library.

Heavy modules (duckdb, polars, rich) are imported inside the commands that need them, so that
`nsysh2d profile` runs on a GPU box that has only torch and click.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from . import __version__
from .errors import EXIT_BAD_INPUT, EXIT_INTERNAL, NsysH2DError

FORMATS = ["table", "json", "csv", "markdown"]


def _fail(message: str, code: int) -> None:
    click.echo(f"nsysh2d: error: {message}", err=True)
    sys.exit(code)


class Group(click.Group):
    """Turns every error into one line on stderr and a documented exit code."""

    def main(self, *args, **kwargs):
        kwargs["standalone_mode"] = False
        try:
            rv = super().main(*args, **kwargs)
            sys.exit(rv if isinstance(rv, int) else 0)
        except NsysH2DError as e:
            _fail(str(e), e.exit_code)
        except click.exceptions.Abort:
            _fail("aborted", 130)
        except click.ClickException as e:
            # Usage errors: click's own one-line message, our exit code for bad input.
            msg = e.format_message()
            ctx = getattr(e, "ctx", None)
            hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
            _fail(msg + hint, EXIT_BAD_INPUT)
        except click.exceptions.Exit as e:
            sys.exit(e.exit_code)
        except KeyboardInterrupt:
            _fail("interrupted", 130)
        except BrokenPipeError:
            sys.exit(0)
        except OSError as e:
            _fail(f"{getattr(e, 'filename', '') or ''}: {e.strerror or e}".lstrip(": "), EXIT_BAD_INPUT)
        except Exception as e:  # a bug: say so in one line, keep the traceback behind a variable
            if os.environ.get("NSYSH2D_DEBUG"):
                raise
            _fail(f"internal error: {type(e).__name__}: {e} (set NSYSH2D_DEBUG=1 for a traceback and "
                  "please report it)", EXIT_INTERNAL)


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="nsysh2d")
def main():
    """Find, explain and gate long-blocking host-to-device copies in Nsight Systems traces.

    A `non_blocking=True` copy from pageable memory (or a strided view of pinned memory) makes
    cudaMemcpyAsync block the CPU thread until the GPU work already queued on the stream drains.
    nsysh2d reports those calls by their host-side duration.

    \b
    Typical session:
      nsysh2d profile workloads/qwen3vl.py         # capture before/after traces (GPU box)
      nsysh2d analyze out/qwen3vl-before.sqlite    # what blocks, where, why
      nsysh2d compare out/qwen3vl-before.sqlite out/qwen3vl-after.sqlite
      nsysh2d gate out/qwen3vl-after.sqlite        # exit 1 if long-blocking copies remain

    Exit codes: 0 ok, 1 gate failed, 2 bad input or usage, 3 no nsys CLI, 4 workload or nsys
    profile failed, 5 import/export failed, 6 output not writable, 70 internal error.
    """


# ----------------------------------------------------------------------------------------- profile
@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-o", "--output-dir", default="nsysh2d-out", show_default=True, type=click.Path(file_okay=False),
              help="Folder for reports, SQLite exports and logs.")
@click.option("--name", help="Base name of the outputs (default: the workload's file name).")
@click.option("--variants", default=None,
              help="Comma-separated values passed as --variant, one capture each. Default: the workload's "
                   "own --variant choices (before,after), or none for a plain command.")
@click.option("--no-variants", is_flag=True, help="Capture once, without --variant.")
@click.option("--nsys", "nsys_path", help="nsys binary (default: $NSYS, PATH, the usual install folders).")
@click.option("--trace", default="cuda,nvtx", show_default=True, help="nsys --trace.")
@click.option("--cudabacktrace", default="memory", show_default=True,
              help="nsys --cudabacktrace (native stacks of memory calls; 'none' to turn off).")
@click.option("--sample", default="process-tree", show_default=True,
              help="nsys --sample (backtraces need sampling on).")
@click.option("--python-backtrace", is_flag=True, help="Also record Python stacks of CUDA calls.")
@click.option("--nsys-arg", "nsys_args", multiple=True, help="Extra argument for nsys profile (repeatable).")
@click.option("--export-arg", "export_args", multiple=True, help="Extra argument for nsys export (repeatable).")
@click.option("--importer-lib", help="Folder added to LD_LIBRARY_PATH when finishing a .qdstrm import.")
@click.option("--python", "python_exe", default=sys.executable, show_default="this interpreter",
              help="Interpreter that runs a .py workload.")
@click.option("--dry-run", is_flag=True, help="Print the nsys commands without running them.")
@click.argument("target", nargs=-1, type=click.UNPROCESSED, required=True)
def profile(output_dir, name, variants, no_variants, nsys_path, trace, cudabacktrace, sample,
            python_backtrace, nsys_args, export_args, importer_lib, python_exe, dry_run, target):
    """Run a workload (or any command) under `nsys profile` and export SQLite.

    \b
      nsysh2d profile workloads/qwen3vl.py                 # before and after variants
      nsysh2d profile workloads/qwen3vl.py -- --steps 20   # arguments for the workload
      nsysh2d profile --name train -- python train.py      # any command

    For a workload with a --variant option, each variant is captured (NAME-VARIANT.sqlite).
    If nsys leaves a .qdstrm because it could not find its importer, a QdstrmImporter near the
    nsys binary finishes the job. Prints what it wrote and the command to run next.
    """
    from . import nsys as nsysmod

    parts = list(target)
    if parts and parts[0] == "--":
        parts = parts[1:]
    if not parts:
        raise NsysH2DError("nothing to profile: give WORKLOAD.py or -- COMMAND", EXIT_BAD_INPUT)
    is_script = parts[0].endswith(".py")
    if is_script:
        script, rest = parts[0], parts[1:]
        if rest and rest[0] == "--":
            rest = rest[1:]
        if not os.path.isfile(script):
            raise NsysH2DError(f"{script}: no such workload file", EXIT_BAD_INPUT)
        base_cmd = [python_exe, os.path.abspath(script), *rest]
        label = name or Path(script).stem
        found = [] if no_variants else (variants.split(",") if variants else nsysmod.workload_variants(script))
    else:
        base_cmd, label = parts, name or Path(parts[0]).name
        found = [] if (no_variants or not variants) else variants.split(",")
    opts = nsysmod.CaptureOptions(
        trace=trace, cudabacktrace=None if cudabacktrace in ("none", "") else cudabacktrace,
        sample=sample, python_backtrace=python_backtrace, extra=list(nsys_args),
        export_extra=list(export_args))
    runs = [(f"{label}-{v}", [*base_cmd, "--variant", v]) for v in found] or [(label, base_cmd)]
    if dry_run:
        exe = nsys_path or os.environ.get("NSYS") or "nsys"
        for lab, cmd in runs:
            click.echo(" ".join(nsysmod.profile_command(exe, str(Path(output_dir) / lab), cmd, opts)))
            click.echo(" ".join(nsysmod.export_command(exe, str(Path(output_dir) / f"{lab}.nsys-rep"),
                                                        str(Path(output_dir) / f"{lab}.sqlite"), opts.export_args())))
        return 0
    exe = nsysmod.find_nsys(nsys_path)
    click.echo(f"nsys: {exe}", err=True)
    out = Path(output_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise NsysH2DError(f"{out}: cannot create output folder ({e.strerror})", 6) from None
    written = []
    for i, (lab, cmd) in enumerate(runs, 1):
        click.echo(f"[{i}/{len(runs)}] capturing {lab}", err=True)
        res = nsysmod.capture(exe, out, lab, cmd, opts, importer_lib=importer_lib,
                              echo=lambda s: click.echo(s, err=True))
        written.append(res.sqlite)
        click.echo(f"wrote {res.sqlite} (report {res.report}, log {res.log})")
    if len(written) == 2:
        click.echo(f"next: nsysh2d compare {written[0]} {written[1]}")
    else:
        click.echo(f"next: nsysh2d analyze {' '.join(written)}")
    return 0


def _register_analysis_commands():
    # Imported lazily so the profiling path never loads duckdb/polars/rich.
    from . import commands  # noqa: F401


if __name__ == "__main__":
    main()
