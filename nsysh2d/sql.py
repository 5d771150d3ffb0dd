"""Load the named SQL files of queries/ (shipped inside the wheel as nsysh2d.queries)."""
from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path


@lru_cache(maxsize=None)
def load(name: str) -> str:
    try:
        return resources.files("nsysh2d.queries").joinpath(f"{name}.sql").read_text()
    except (ModuleNotFoundError, FileNotFoundError):
        # Running from a source checkout without installing: queries/ sits beside the package.
        return (Path(__file__).resolve().parent.parent / "queries" / f"{name}.sql").read_text()


def condition(name: str, **values) -> str:
    """A condition file of queries/ (sqlite_*.sql: run by SQLite itself, see ingest.py) without its
    comments, with `{name}` placeholders filled in (callers pass integers only)."""
    text = " ".join(line for line in load(name).splitlines() if not line.lstrip().startswith("--")).strip()
    return text.format(**values) if values else text


def names() -> list[str]:
    try:
        files = resources.files("nsysh2d.queries").iterdir()
        return sorted(Path(f.name).stem for f in files if f.name.endswith(".sql"))
    except ModuleNotFoundError:
        return sorted(p.stem for p in (Path(__file__).resolve().parent.parent / "queries").glob("*.sql"))
