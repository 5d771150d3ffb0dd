"""Gate settings from `[tool.nsysh2d.gate]` in the project's pyproject.toml (the command line wins)."""
from __future__ import annotations

from pathlib import Path

from ..errors import BadInput, first_line
from ..source.files import check_regular

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

KEYS = {"max-long-calls", "min-duration", "max-blocked-per-step", "max-gpu-idle-per-step", "kinds", "direction", "calls", "count", "tolerance",
        "baseline", "step-pattern", "warmup-steps", "fail-causes", "source-root"}


def find_pyproject(start: Path | None = None) -> Path | None:
    here = (start or Path.cwd()).resolve()
    for d in [here, *here.parents]:
        p = d / "pyproject.toml"
        if p.is_file():
            return p
        if (d / ".git").exists():
            break
    return None


def _load(p: Path, what: str) -> dict:
    """The TOML file, or one line saying why not: a pull request's pyproject may nest arrays or tables
    thousands deep (tomllib recurses), hold integers of thousands of digits or text that is not UTF-8."""

    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except RecursionError:
        raise BadInput(f"{p}: cannot read {what} (values nested too deeply)") from None
    except (OSError, ValueError) as e:   # UnicodeDecodeError and tomllib's errors are ValueErrors
        raise BadInput(f"{p}: cannot read {what} ({first_line(e, 200)})") from None


def scheduler_setting(given: str | None) -> str | None:
    """--scheduler (or $NSYSH2D_SCHEDULER, which click reads), else None: the local process pool.

    Never from a file in the checkout: in CI the checkout is the pull request's, and a scheduler address
    decides where nsysh2d connects and whose results it takes (docs/security.md). A pyproject.toml that
    still sets `[tool.nsysh2d] scheduler` is refused, so nobody's setting is silently ignored."""
    if given:
        return given
    p = find_pyproject()
    if p is None:
        return None
    table = _load(p, "[tool.nsysh2d]").get("tool", {}).get("nsysh2d", {})
    if isinstance(table, dict) and "scheduler" in table:
        raise BadInput(f"{p}: [tool.nsysh2d] scheduler is not read from a project file (the checkout must not "
                       "choose where nsysh2d connects); pass --scheduler or set NSYSH2D_SCHEDULER")
    return None


def gate_settings(path: Path | None = None) -> tuple[dict, Path | None]:
    return tool_section("gate", KEYS, path)


LINT_KEYS = {"include", "exclude", "select", "ignore", "accept-inside"}


def lint_settings(path: Path | None = None) -> tuple[dict, Path | None]:
    """[tool.nsysh2d.lint]: lists of strings only (globs, rule codes or names)."""
    section, p = tool_section("lint", LINT_KEYS, path)
    for key, value in section.items():
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise BadInput(f"{p}: [tool.nsysh2d.lint] {key} must be a list of strings, not {value!r}")
    return section, p


def tool_section(name: str, keys: set, path: Path | None) -> tuple[dict, Path | None]:
    p = path or find_pyproject()
    if p is None:
        return {}, None

    check_regular(p, "the settings file")
    data = _load(p, f"[tool.nsysh2d.{name}]")
    section = data
    for key in ("tool", "nsysh2d", name):
        section = section.get(key, {})
        if not isinstance(section, dict):
            raise BadInput(f"{p}: [tool.nsysh2d] {key} must be a table of settings, not {section!r}"
                           if key == name else f"{p}: {key} must be a table, not {section!r}")
    unknown = set(section) - keys
    if unknown:
        raise BadInput(f"{p}: unknown key(s) in [tool.nsysh2d.{name}]: {', '.join(sorted(unknown))} "
                       f"(known: {', '.join(sorted(keys))})")
    return section, p
