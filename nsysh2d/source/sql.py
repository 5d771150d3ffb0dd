"""The named SQL files of queries/ (shipped inside the wheel as nsysh2d.queries), and the one way to run
them: DuckDB with `$name` parameters. Names carry their layer: 'source/views', 'model/nvtx', ...
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parent.parent.parent / "queries"


@lru_cache(maxsize=None)
def load(name: str) -> str:
    try:
        return resources.files("nsysh2d.queries").joinpath(f"{name}.sql").read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        # Running from a source checkout without installing: queries/ sits beside the package.
        return (_CHECKOUT / f"{name}.sql").read_text(encoding="utf-8")


def condition(name: str) -> str:
    """A condition file for SQLite itself (source/sqlite_*.sql, see ingest.py), without its comments."""
    return " ".join(line for line in load(name).splitlines() if not line.lstrip().startswith("--")).strip()


def run(con, name: str, params: dict | None = None):
    """Run the named file on a DuckDB connection; the parameters it names as $name come from `params`
    (only those it uses: DuckDB rejects unused ones)."""
    text = load(name)
    used = {k: v for k, v in (params or {}).items() if f"${k}" in text}
    return con.execute(text, used) if used else con.execute(text)


def rows(con, name: str, params: dict | None = None) -> list[dict]:
    """The rows of the named query as dicts (no polars: the CLI path stays light)."""
    cur = run(con, name, params)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def names() -> list[str]:
    """Every query's name (for the cache key: a change to any SQL file invalidates cached reports)."""
    try:
        root = resources.files("nsysh2d.queries")
        files = [f"{d.name}/{f.name}" for d in root.iterdir() if d.is_dir() for f in d.iterdir()]
    except ModuleNotFoundError:
        files = [str(p.relative_to(_CHECKOUT)) for p in _CHECKOUT.glob("*/*.sql")]
    return sorted(f[:-4] for f in files if f.endswith(".sql"))
