"""Small commands about the installation itself: `nsysh2d cache-clear` and `nsysh2d recipe-path`."""
from __future__ import annotations

import click


# ----------------------------------------------------------------------------------------- cache
@click.command("cache-clear")
def cache_clear():
    """Delete what nsysh2d wrote in its cache (results, exports, copies); unmarked folders are not touched."""
    from ..cache import cache_root, clear_cache

    n = clear_cache()
    click.echo(f"removed {n} cached file(s) from {cache_root()}")
    return 0


# ----------------------------------------------------------------------------------------- recipe
@click.command("recipe-path")
@click.option("--nsys", "nsys_path", metavar="PATH", help="The nsys to check (default: $NSYS, then PATH, then the "
              "usual install folders).")
@click.option("--nsys-shadow", is_flag=True, help="Print instead the nsys to run the recipe with: the given one, "
              "or, when its install lacks the folder nsys's recipe runner needs (Debian's package), a private "
              "stand-in in nsysh2d's cache that has it (files linked, the 54 MB binary copied once).")
def recipe_path(nsys_path, nsys_shadow):
    """Print the folder holding the nsys recipe `nsysh2d_h2d`, for nsys's own runner:

    \b
      NSYS_RECIPE_PATH=$(nsysh2d recipe-path) nsys recipe nsysh2d_h2d --input run1.sqlite run2.nsys-rep
      NSYS_RECIPE_PATH=$(nsysh2d recipe-path) nsys recipe nsysh2d_h2d --mode dask-futures --input reports/

    The recipe runs nsysh2d's analysis on each report (nsys --mode none|concurrent|dask-futures) and writes
    reports.json (the `analyze --format json` document) and report.txt into its output folder.

    Debian's nsys package leaves out `python/packages/nsys_recipe/third_party`, and `nsys recipe` then stops
    with "Cannot find ... third_party". The folder may stay empty: create it as the install's owner (the note
    on stderr names it), or, without write access to the install:

    \b
      NSYS_RECIPE_PATH=$(nsysh2d recipe-path) $(nsysh2d recipe-path --nsys-shadow) recipe nsysh2d_h2d ...
    """
    from ..capture.recipe_runner import recipe_folder

    from ..cache import cache_dir

    path, nsys, gap = recipe_folder(nsys_path, (lambda: cache_dir("nsys")) if nsys_shadow else None)
    click.echo(path)
    if gap is not None:
        from ..present.safe import terminal
        from .quiet import note

        note(f"note: `nsys recipe` of {terminal(nsys)} stops with 'Cannot find ... third_party': its install lacks "
             f"{terminal(str(gap))} (Debian's package leaves it out; it may stay empty). Create it as the install's "
             "owner, or run the recipe with $(nsysh2d recipe-path --nsys-shadow) in place of nsys.", err=True)
    return 0
