"""Small commands about the installation itself: `nsysh2d cache-clear`, `nsysh2d recipe-path` and `--version`."""
from __future__ import annotations

import platform
import subprocess

import click

from .. import __version__
from ..errors import NsysH2DError
from .options import nsys_option
from .quiet import note


# ----------------------------------------------------------------------------------------- cache
@click.command("cache-clear")
def cache_clear():
    """Delete what nsysh2d wrote in its cache (results, exports, copies); unmarked folders are not touched."""
    from ..cache import cache_root, clear_cache   # lazy: --help stays fast

    n = clear_cache()
    click.echo(f"removed {n} cached file(s) from {cache_root()}")
    return 0


# ----------------------------------------------------------------------------------------- recipe
@click.command("recipe-path")
@nsys_option("The nsys to check (default: $NSYS, then PATH, then the usual install folders).", metavar="PATH")
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
    from ..capture.recipe_runner import recipe_folder   # lazy: --help stays fast
    from ..present.safe import terminal   # lazy: --help stays fast
    from ..cache import cache_dir   # lazy: --help stays fast (about 10 ms)

    path, nsys, gap = recipe_folder(nsys_path, (lambda: cache_dir("nsys")) if nsys_shadow else None)
    click.echo(path)
    if gap is not None:
        note(f"note: `nsys recipe` of {terminal(nsys)} stops with 'Cannot find ... third_party': its install lacks "
             f"{terminal(str(gap))} (Debian's package leaves it out; it may stay empty). Create it as the install's "
             "owner, or run the recipe with $(nsysh2d recipe-path --nsys-shadow) in place of nsys.", err=True)
    return 0


# ----------------------------------------------------------------------------------------- --version
def show_version(ctx, _param, value) -> None:
    """--version: nsysh2d, and what it runs with (read without importing DuckDB), and the nsys it would use."""
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import PackageNotFoundError, version   # lazy: --help stays fast (importlib.metadata: 10 ms)

    from ..capture.nsys import find_nsys   # lazy: --help stays fast
    from ..present.safe import terminal   # lazy: --help stays fast
    def pkg(name):
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    try:
        exe = find_nsys()
        try:
            out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            out = "its version could not be read"
        nsys = f"{terminal(exe)} ({terminal(out.splitlines()[-1] if out else '?')})"
    except NsysH2DError:
        nsys = "not found (needed by profile and for .nsys-rep inputs; $NSYS or --nsys name one)"
    from ..source.ingest import compiled_reader   # lazy: the source layer is not loaded for --help

    ints = compiled_reader()
    reader = (f"compiled (SQLite {ints.sqlite_version})" if ints else
              f"ADBC {pkg('adbc-driver-sqlite')} (the compiled reader was not built or NSYSH2D_READER=adbc; see setup.py)")
    click.echo(f"nsysh2d {__version__}\nPython {platform.python_version()}\nDuckDB {pkg('duckdb')} (sqlite scanner "
               f"{pkg('duckdb-extension-sqlite-scanner')})\nreader of large tables: {reader}\nnsys: {nsys}")
    ctx.exit(0)


version_option = click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=show_version,
                              help="Show nsysh2d's version, the Python, DuckDB and nsys it uses, and exit.")
