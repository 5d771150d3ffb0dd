"""`nsysh2d api-summary`: every CUDA API function of a report with its call count and host times."""
from __future__ import annotations

import click

from .cli_kit import FORMATS, Command, emit, error_line


@click.command("api-summary", cls=Command)
@click.argument("reports", nargs=-1, required=True, type=click.Path(dir_okay=True))
@click.option("--format", "fmt", type=click.Choice(FORMATS, case_sensitive=False), default="table", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here (atomically) instead of stdout.")
@click.option("--nsys", "nsys_path", help="nsys binary used to export .nsys-rep inputs.")
def api_summary(reports, fmt, output, nsys_path):
    """Per CUDA API function (runtime and driver): share of the API time, total, calls, average, median,
    min, max and standard deviation of the host-side duration -- the figures of `nsys stats -r
    cuda_api_sum`, read straight from the export (no analysis model is built).

    \b
      nsysh2d api-summary run.sqlite
      nsysh2d api-summary run.sqlite --format csv -o api.csv
    """
    from .analyses.api_summary import api_summary as summarize
    from .errors import NsysH2DError
    from .present import api_summary_output

    done, errors = [], []
    for path in reports:
        try:
            done.append(summarize(path, nsys_path))
        except NsysH2DError as e:
            click.echo(error_line(str(e)), err=True)
            errors.append((path, str(e), e.exit_code))
    if done or fmt.lower() == "json":   # JSON asked for is JSON, errors and all
        emit(api_summary_output(fmt, done, errors), output)
    return max((c for _p, _m, c in errors), default=0)
