"""`nsysh2d lint`: the static check (nsysh2d.static) as a CLI command. It imports neither torch nor DuckDB nor
polars: it runs in a pre-commit hook on any machine."""
from __future__ import annotations

from pathlib import Path

import click

from ..rules.fixes import RULES
from .config import lint_settings
from .kit import Command, emit, error_line
from .options import config_option, format_option, output_option

LINT_FORMATS = ["text", "json", "sarif", "github"]


def _names(_ctx, _param, values) -> list[str]:
    return [n.strip() for v in values for n in v.split(",") if n.strip()]


@click.command(cls=Command)
@click.argument("paths", nargs=-1, type=click.Path())
@format_option(LINT_FORMATS, "text", help="text: path:line:col: RULE message; sarif: SARIF 2.1.0 for GitHub code "
                                           "scanning; github: workflow annotations.")
@output_option("Write here instead of stdout.")
@click.option("--select", multiple=True, callback=_names, help="Only these rules (codes or names; comma-separated, "
              "repeatable). Default: [tool.nsysh2d.lint] select, else all.")
@click.option("--ignore", multiple=True, callback=_names, help="Leave these rules out (added to the config's).")
@config_option("lint")
def lint(paths, fmt, output, select, ignore, config_path):
    """Find non_blocking host-to-device copies that block, in Python source, before anything runs.

    \b
      nsysh2d lint src/                     # exit 1 when something is found, 0 when clean, 2 on bad input
      nsysh2d lint . --format sarif -o nsysh2d.sarif
      nsysh2d lint --select H2D001,H2D002 model_runner.py

    \b
    Rules (the classes and fixes of `analyze`; docs/lint.md):
      H2D001 pageable-non-blocking   non_blocking copy from pageable memory (numpy, lists, CPU tensors)
      H2D002 pinned-strided-view     non_blocking copy of a strided view of pinned memory (buf[:, :n])
      H2D003 pin-memory-per-step     .pin_memory() or a pinned allocation inside a loop, then copied
      H2D004 pinned-rewrite-in-flight  a pinned buffer written again before its copy is waited for
      H2D005 pageable-device-tensor  torch.tensor(host data, device=cuda) outside set-up code
      H2D000 suppression-without-reason
    Accept a site on its line: `# nsysh2d: ok[H2D001] <reason>` (or vLLM's `# gpu-sync-ok: <reason>`).
    """
    from .. import present   # lazy: --help stays fast
    from ..static import Settings, lint as run_lint   # lazy: --help stays fast

    section, conf = lint_settings(Path(config_path) if config_path else None)
    result = run_lint(list(paths) or ["."], Settings.from_config(section, conf, select, ignore))
    for path, msg in result.errors:
        click.echo(error_line(f"{path}: {msg}"), err=True)
    emit(present.output(fmt.lower(), present.LintView(result, RULES)), output, commands=fmt.lower() == "github")
    return result.exit_code
