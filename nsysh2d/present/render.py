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
    from rich import box
    from rich.console import Console
    from rich.table import Table

    import os
    import sys

    tty = (file or sys.stdout).isatty() if hasattr(file or sys.stdout, "isatty") else False
    width = None if tty else int(os.environ.get("COLUMNS", "160"))
    console = Console(file=file, highlight=False, soft_wrap=False, width=width, markup=False)
    if heading:
        console.print(heading, style="bold")
    for s in sections:
        t = Table(title=s.title, title_justify="left", box=box.SIMPLE_HEAD, caption=s.note or None,
                  caption_justify="left")
        for i, c in enumerate(s.columns):
            t.add_column(c.title, justify="right" if c.kind in ("ns", "bytes", "int", "float") else "left",
                         overflow="fold", no_wrap=(i == 0))
        for r in s.rows:
            t.add_row(*[cell(r.get(c.key), c.kind) for c in s.columns])
        if s.rows:
            console.print(t)
        else:
            console.print(f"{s.title}: none", style="bold")
        for ln in s.lines:
            console.print(f"  {ln}")


def render_sections(fmt: str, sections: list[Section], heading: str = "") -> str:
    if fmt == "csv":
        return to_csv(sections)
    if fmt == "markdown":
        return to_markdown(sections, f"## {heading}" if heading else "")
    buf = io.StringIO()
    to_terminal(sections, heading, file=buf)
    return buf.getvalue()
