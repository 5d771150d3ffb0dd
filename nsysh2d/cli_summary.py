"""`nsysh2d api-summary`: every CUDA API function of a report with its call count and host times."""
from __future__ import annotations

import click

from .cli_kit import FORMATS, Command, emit, error_line, no_cache_option, scheduler_option


@click.command("api-summary", cls=Command)
@click.argument("reports", nargs=-1, required=True, type=click.Path(dir_okay=True))
@click.option("--format", "fmt", type=click.Choice(FORMATS, case_sensitive=False), default="table", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here (atomically) instead of stdout.")
@click.option("--nsys", "nsys_path", help="nsys binary used to export .nsys-rep inputs.")
@click.option("-j", "--jobs", type=click.IntRange(1), help="Reports summarized in parallel (default: the CPUs this process may use).")
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
    from .config import scheduler_setting
    from .present import api_summary_output
    from .run import analyze_many

    done, errors = analyze_many(list(reports), None, (), jobs=jobs, nsys=nsys_path, use_cache=not no_cache,
                                scheduler=scheduler_setting(scheduler), analysis="api-summary")
    for _path, msg, _code in errors:
        click.echo(error_line(msg), err=True)
    if done or fmt.lower() == "json":   # JSON asked for is JSON, errors and all
        emit(api_summary_output(fmt, done, errors), output)
    return max((c for _p, _m, c in errors), default=0)
