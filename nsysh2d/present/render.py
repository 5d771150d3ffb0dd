"""Renderers: sections of rows to a terminal table (terminal.py) or Markdown; rows to CSV; documents to JSON."""
from __future__ import annotations

import csv
import io
import json
import os
import sys
from dataclasses import dataclass, field

from .. import __version__
from ..units import format_bytes, format_ns
from . import safe
from .terminal import table, wrap


@dataclass
class Column:
    key: str
    title: str
    kind: str = "text"   # text | ns | bytes | int | float | bool | num (a number already formatted)
    drop: int = 0        # > 0: left out of a terminal table too wide for the screen, highest first


@dataclass
class Section:
    title: str
    columns: list[Column]
    rows: list[dict]
    note: str = ""
    lines: list = field(default_factory=list)   # free text shown under the table: str, or safe.Line


def cell(value, kind: str) -> str:
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
    return safe.json_text(json.dumps(obj, indent=2, default=str, ensure_ascii=False)) + "\n"


def document(**fields) -> str:
    """The JSON envelope of every command: {"nsysh2d": version, ...fields}."""

    return to_json({"nsysh2d": __version__, **fields})


def rows_csv(rows: list[dict]) -> str:
    """One loadable table: the JSON's own field names as the header (in order of first appearance), raw
    values in base units (ns, bytes), lists as JSON text, None as an empty cell."""
    keys: dict[str, None] = {}
    for row in rows:
        keys.update(dict.fromkeys(row))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(list(keys))
    for row in rows:
        w.writerow(["" if row.get(k) is None else safe.csv_cell(json.dumps(row[k]))
                    if isinstance(row.get(k), (list, dict)) else safe.csv_cell(row[k]) for k in keys])
    return buf.getvalue()


def to_markdown(sections: list[Section], heading: str = "") -> str:
    """Every text from a section (titles, notes, cells, lines) through safe.markdown: any may hold a name
    from the trace."""
    md = safe.markdown
    out = [f"## {md(heading)}", ""] if heading else []
    for s in sections:
        out.append(f"### {md(s.title)}")
        if s.note:
            out += ["", md(s.note)]
        out.append("")
        if s.rows:
            out.append("| " + " | ".join(c.title for c in s.columns) + " |")
            out.append("|" + "|".join("---:" if c.kind in ("ns", "bytes", "int", "float", "num") else "---"
                                      for c in s.columns) + "|")
            for r in s.rows:
                out.append("| " + " | ".join(md(cell(r.get(c.key), c.kind)) for c in s.columns) + " |")
        else:
            out.append("_none_")
        out += [""] + [f"- {ln.render(md) if isinstance(ln, safe.Line) else md(ln)}" for ln in s.lines]
        out += [""] if s.lines else []
    return "\n".join(out).rstrip() + "\n"


def to_terminal(sections: list[Section], heading: str = "", file=None) -> None:
    """Tables that fit the terminal (or $COLUMNS, or 160 columns when piped): numbers are never cut, long
    names are cut in the middle (start and end kept); notes wrap at the same width (present/terminal.py lays them out)."""

    width = terminal_width(file)
    t = safe.terminal   # a heading, cell, note or line may hold a name from the trace: each is one line
    out: list[str] = wrap(t(heading), width) if heading else []
    for s in sections:
        if not s.rows:
            out.extend(wrap(f"{s.title}: none", width))
        else:
            columns, cells, dropped = fit_columns(s.columns, s.rows, width)
            widths = column_widths(columns, cells, width)
            # A table whose numbers alone are wider than the terminal is printed wider, never cut.
            caption = f"({', '.join(dropped)} left out to fit {width} columns; --format json has all)" if dropped else ""
            layout = [(c.title, widths[i], c.kind in NUMERIC, c.kind in NUMERIC and c.kind != "bool", c.kind not in NUMERIC)
                      for i, c in enumerate(columns)]   # names are cut in the middle: their ends tell them apart
            out.extend(table(layout, cells, s.title, caption))
        if s.note:
            out.extend(wrap(t(s.note), width))
        for ln in s.lines:
            out.extend(wrap(f"  {t(ln)}", width))
    (file or sys.stdout).write("".join(line + "\n" for line in out))


NUMERIC = ("ns", "bytes", "int", "float", "bool", "num")


def fit_columns(columns: list[Column], rows: list[dict], width: int):
    """The columns a terminal table keeps: the droppable ones go, highest `drop` first, until the rest fit
    with every name whole; only then are names cut (column_widths). A call site cut to keep a column of
    secondary figures helps nobody."""
    columns = list(columns)
    dropped = []
    while True:
        cells = [[safe.terminal(cell(r.get(c.key), c.kind)) for c in columns] for r in rows]
        natural = column_widths(columns, cells, 10 ** 9)   # what each column takes with nothing cut
        droppable = [c for c in columns if c.drop]
        if sum(natural) + 3 * len(natural) + 1 <= width or not droppable:
            return columns, cells, dropped
        worst = max(droppable, key=lambda c: c.drop)
        columns.remove(worst)
        dropped.append(worst.title)


def column_widths(columns: list[Column], cells: list[list[str]], width: int) -> list[int]:
    """Numbers get their full width (a long title wraps between words); names share what is left, each
    cut to no less than 12 characters, the longest cut first."""
    natural = [max([len(c.title)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    out = [max([len(w) for w in c.title.split()] + [len(row[i]) for row in cells]) if c.kind in NUMERIC
           else natural[i] for i, c in enumerate(columns)]
    # Each column has a blank either side, a separator between, and the table a blank edge: 3n + 1.
    room = width - 3 * len(columns) - 1
    names = [i for i, c in enumerate(columns) if c.kind not in NUMERIC]
    while sum(out) > room and names:
        i = max(names, key=lambda j: out[j])
        floor = min(natural[i], 12)
        if out[i] <= floor:
            names.remove(i)
            continue
        out[i] = max(floor, out[i] - (sum(out) - room))
    return out


def terminal_width(file=None) -> int:
    # $COLUMNS is the shell's, not a setting of the run: one that is no width from 20 to 10000 (abc, -5,
    # 99999999) is ignored, as if unset, rather than stopping the run.
    cols = (os.environ.get("COLUMNS") or "").strip()
    if cols.isascii() and cols.isdigit() and len(cols) <= 5 and 20 <= int(cols) <= 10_000:
        return int(cols)
    out = file or sys.stdout
    if hasattr(out, "isatty") and out.isatty():
        try:   # the terminal's own width (shutil.get_terminal_size would take $COLUMNS again)
            return min(max(os.get_terminal_size(out.fileno()).columns, 20), 10_000) or 160
        except (OSError, ValueError, AttributeError):
            return 160
    return 160


def render_sections(fmt: str, sections: list[Section], heading: str = "") -> str:
    """Sections as Markdown, or as a terminal table (every other text format: present.output sends JSON, CSV
    and HTML elsewhere)."""
    if fmt == "markdown":
        return to_markdown(sections, heading)
    buf = io.StringIO()
    to_terminal(sections, heading, file=buf)
    # Cells are padded to their column's width: no trailing blanks in a pipe or a file.
    return "".join(line.rstrip() + "\n" for line in buf.getvalue().splitlines())
