"""Commands that read a trace without the copy report: `nsysh2d api-summary` (every CUDA API function with its
call count and host times) and `nsysh2d threshold` (the payload threshold of a sweep trace)."""
from __future__ import annotations

import click

from .config import scheduler_setting
from .kit import Command, emit, error_line, note
from .options import (FORMATS, REPORT_FORMATS, format_option, jobs_option, no_cache_option, nsys_option,
                      output_option, scheduler_option)


@click.command("api-summary", cls=Command)
@click.argument("reports", nargs=-1, required=True, type=click.Path(dir_okay=True))
@format_option(FORMATS)
@output_option()
@nsys_option()
@jobs_option
@scheduler_option
@no_cache_option
def api_summary(reports, fmt, output, nsys_path, jobs, scheduler, no_cache):
    """Per CUDA API function (runtime and driver): share of the API time, total, calls, average, median,
    min, max and standard deviation of the host-side duration -- the figures of `nsys stats -r
    cuda_api_sum`, read straight from the export (no analysis model is built). Kineto traces too: their
    runtime and driver events.

    \b
      nsysh2d api-summary run.sqlite
      nsysh2d api-summary rank-folder/ -j 4 --format csv -o api.csv
    """
    from .. import present   # lazy: --help stays fast
    from ..runner.run import analyze_many   # lazy: --help stays fast

    done, errors = analyze_many(list(reports), None, (), jobs=jobs, nsys=nsys_path, use_cache=not no_cache,
                                scheduler=scheduler_setting(scheduler), analysis="api-summary")
    for _path, msg, _code in errors:
        click.echo(error_line(msg), err=True)
    if done or fmt.lower() == "json":   # JSON asked for is JSON, errors and all
        emit(present.output(fmt, present.ApiSummaryView(done, errors)), output)
    return max((c for _p, _m, c in errors), default=0)


@click.command(cls=Command)
@click.argument("sweep", type=click.Path(dir_okay=False))
@format_option(REPORT_FORMATS)
@output_option()
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False),
              help="Also draw host time vs payload per variant (.png or .svg; needs matplotlib).")
@nsys_option("nsys binary used to export a .nsys-rep input.")
def threshold(sweep, fmt, output, plot_path, nsys_path):
    """Payload threshold of blocking copies, from a workloads/h2d_sweep.py trace.

    For each source variant, GPU backlog depth and number of copies in flight: the smallest payload
    from which on the call waits for the queued GPU work (in most repeats), the largest payload
    below it that did not, the spread of that threshold over repeats, and blocked time / backlog.

    \b
      nsysh2d profile --no-variants --sample none --cudabacktrace none workloads/h2d_sweep.py
      nsysh2d threshold nsysh2d-out/h2d_sweep.sqlite --plot threshold.png
    """
    from .. import present   # lazy: --help stays fast
    from ..present.plots import save_threshold_plot   # lazy: --help stays fast
    from ..present.safe import terminal   # lazy: --help stays fast
    from ..runner.run import analyze_one   # lazy: --help stays fast

    result = analyze_one(sweep, None, nsys_path, analysis="threshold")
    if plot_path:
        save_threshold_plot(result.series, plot_path, title=sweep)
        note(f"wrote {terminal(plot_path)}", err=True)   # stderr: stdout stays the report
    emit(present.output(fmt, present.ThresholdView(result)), output)
    return 0
