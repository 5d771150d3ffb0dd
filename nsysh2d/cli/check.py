"""`nsysh2d check`: the runtime checker (nsysh2d.checker.runtime) on a script, as a CLI command. Imports torch only
when it runs: `nsysh2d --help` stays light."""
from __future__ import annotations

import os
import traceback

import click

from ..errors import EXIT_WORKLOAD_FAILED, NsysH2DError
from .kit import Command, emit
from .options import FORMATS, format_option, output_option


# ----------------------------------------------------------------------------------------- check
@click.command(cls=Command, context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--fail", is_flag=True, help="Exit 1 when a copy that blocks, or a write into a pinned source "
              "whose copy was still in flight, was seen (a gate without nsys).")
@format_option(FORMATS)
@output_option("Write the report here instead of stdout.")
@click.option("--device", "devices", multiple=True, default=("cuda",), show_default=True,
              help="Device type whose incoming copies are watched (repeatable).")
@click.argument("script", nargs=-1, type=click.UNPROCESSED, required=True)
def check(fail, fmt, output, devices, script):
    """Run a Python script and report its non_blocking host-to-device copies that block, without nsys.

    \b
      nsysh2d check train.py --epochs 1
      nsysh2d check --fail --format json -o h2d.json -- python bench.py
      nsysh2d check -- python -m mypkg.train --steps 10

    Each copy made with non_blocking=True from the CPU is classified as PyTorch's copy will run it:
    pageable source (blocks), pinned but through a pageable temporary (strided or expanded views: blocks),
    or pinned (returns at once). A write into a pinned source while its copy may still be in flight (the GPU
    would read the new values) is flagged too, with both sites. Call sites are the script's own file:line. One thread: copies made by
    other threads or by C++ code outside the dispatcher are not seen (see nsysh2d.checker.runtime).
    """
    from .. import present   # lazy: --help stays fast
    from ..checker.runtime import run_script   # lazy: --help stays fast

    argv = list(script[1:] if script and script[0] == "--" else script)
    checker, code = run_script(argv, devices)
    emit(present.output(fmt, present.CheckView(checker.report())), output)   # what was seen, crash or not
    if checker.crash is not None:   # the script's failure, not nsysh2d's: its own traceback, exit 4 (not 70)
        click.echo(script_traceback(checker.crash), err=True, nl=False)
        raise NsysH2DError(f"{argv[0]} raised {type(checker.crash).__name__} (its traceback above); the report "
                           "shows the copies seen before it", EXIT_WORKLOAD_FAILED)
    if code:
        raise NsysH2DError(f"{argv[0]} exited {code}", EXIT_WORKLOAD_FAILED)
    return 1 if fail and (checker.flagged or checker.rewrites) else 0


def script_traceback(e: BaseException) -> str:
    """The traceback Python would print for the script, from its own first frame (runpy's and nsysh2d's left out:
    this command's frames and checker/runtime.py's, which runs the script)."""
    tb, ours = e.__traceback__, os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    while tb is not None and tb.tb_next is not None:
        f = tb.tb_frame.f_code.co_filename
        if not (f.startswith("<frozen runpy") or f.endswith("runpy.py") or os.path.abspath(f).startswith(ours)):
            break
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(e), e, tb))

