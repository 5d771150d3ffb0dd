"""Small commands about the installation itself: `nsysh2d cache-clear` and `nsysh2d recipe-path`."""
from __future__ import annotations

import click


# ----------------------------------------------------------------------------------------- cache
@click.command("cache-clear")
def cache_clear():
    """Delete what nsysh2d wrote in its cache (results, exports, copies); unmarked folders are not touched."""
    from .cache import cache_root, clear_cache

    n = clear_cache()
    click.echo(f"removed {n} cached file(s) from {cache_root()}")
    return 0


# ----------------------------------------------------------------------------------------- recipe
@click.command("recipe-path")
def recipe_path():
    """Print the folder holding the nsys recipe `nsysh2d_h2d`, for nsys's own runner:

    \b
      NSYS_RECIPE_PATH=$(nsysh2d recipe-path) nsys recipe nsysh2d_h2d --input run1.sqlite run2.nsys-rep
      NSYS_RECIPE_PATH=$(nsysh2d recipe-path) nsys recipe nsysh2d_h2d --mode dask-futures --input reports/

    The recipe runs nsysh2d's analysis on each report (nsys --mode none|concurrent|dask-futures) and writes
    reports.json (the `analyze --format json` document) and report.txt into its output folder.
    """
    from importlib import resources

    click.echo(str(resources.files("nsysh2d") / "recipe"))
    return 0
