"""Renderers: sections of rows to a terminal table (rich), Markdown, CSV; documents to JSON."""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field


@dataclass
class Column:
    key: str
    title: str
    kind: str = "text"   # text | ns | bytes | int | float | bool


@dataclass
class Section:
    title: str
    columns: list[Column]
    rows: list[dict]
    note: str = ""
    lines: list[str] = field(default_factory=list)   # free text shown under the table


def cell(value, kind: str) -> str:
    from ..units import format_bytes, format_ns

    if value is None:
        return "-"
    if kind == "ns":
        return format_ns(value)
    if kind == "bytes":
        return format_bytes(value)
    if kind == "float":
        return f"{value:.2f}"
    if kind == "bool":
        return "yes" if value else "no"
    return str(value)


def to_json(obj) -> str:
    return json.dumps(obj, indent=2, default=str, ensure_ascii=False) + "\n"


def document(**fields) -> str:
    """The JSON envelope of every command: {"nsysh2d": version, ...fields}."""
    from .. import __version__

    return to_json({"nsysh2d": __version__, **fields})


def to_csv(sections: list[Section]) -> str:
    """The rows of every section, raw values (ns, bytes), one header per distinct column set."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    last = None
    for s in sections:
        keys = [c.key for c in s.columns]
        if keys != last:
            w.writerow(keys)
            last = keys
        for r in s.rows:
            w.writerow(["" if r.get(k) is None else r.get(k) for k in keys])
    return buf.getvalue()


def to_markdown(sections: list[Section], heading: str = "") -> str:
    out = [heading, ""] if heading else []
    for s in sections:
        out.append(f"### {s.title}")
        if s.note:
            out += ["", s.note]
        out.append("")
        if s.rows:
            out.append("| " + " | ".join(c.title for c in s.columns) + " |")
            out.append("|" + "|".join("---:" if c.kind in ("ns", "bytes", "int", "float") else "---"
                                      for c in s.columns) + "|")
            for r in s.rows:
                out.append("| " + " | ".join(cell(r.get(c.key), c.kind).replace("|", "\\|")
                                             for c in s.columns) + " |")
        else:
            out.append("_none_")
        out += [""] + [f"- {ln}" for ln in s.lines] + ([""] if s.lines else [])
    return "\n".join(out).rstrip() + "\n"


def to_terminal(sections: list[Section], heading: str = "", file=None) -> None:
    """Tables that fit the terminal (or $COLUMNS, or 160 columns when piped): numbers are never cut, long
    names end in an ellipsis; notes wrap at the same width."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = Console(file=file, highlight=False, soft_wrap=False, width=terminal_width(file), markup=False)
    if heading:
        console.print(heading, style="bold")
    for s in sections:
        if not s.rows:
            console.print(f"{s.title}: none", style="bold")
        else:
            t = Table(title=s.title, title_justify="left", box=box.SIMPLE_HEAD)
            cells = [[cell(r.get(c.key), c.kind) for c in s.columns] for r in s.rows]
            for i, c in enumerate(s.columns):
                numeric = c.kind in ("ns", "bytes", "int", "float", "bool")
                widest = max([len(c.title)] + [len(row[i]) for row in cells])
                # Numbers keep their full width; names give way, cut with an ellipsis (never below 12).
                t.add_column(c.title, justify="right" if numeric and c.kind != "bool" else "left", no_wrap=True,
                             overflow="ellipsis", min_width=widest if numeric else min(widest, 12))
            for row in cells:
                t.add_row(*row)
            console.print(t)
        if s.note:
            console.print(s.note)
        for ln in s.lines:
            console.print(f"  {ln}")


def terminal_width(file=None) -> int:
    import os
    import shutil
    import sys

    from ..errors import BadInput

    cols = os.environ.get("COLUMNS")
    if cols is not None:
        if not cols.strip().isdigit() or not 20 <= int(cols) <= 10_000:
            raise BadInput(f"bad COLUMNS={cols!r}: a terminal width from 20 to 10000")
        return int(cols)
    out = file or sys.stdout
    if hasattr(out, "isatty") and out.isatty():
        return shutil.get_terminal_size((160, 24)).columns
    return 160


def render_sections(fmt: str, sections: list[Section], heading: str = "") -> str:
    if fmt == "csv":
        return to_csv(sections)
    if fmt == "markdown":
        return to_markdown(sections, f"## {heading}" if heading else "")
    buf = io.StringIO()
    to_terminal(sections, heading, file=buf)
    # rich pads every line to the table's width: no trailing blanks in a pipe or a file.
    return "".join(line.rstrip() + "\n" for line in buf.getvalue().splitlines())
