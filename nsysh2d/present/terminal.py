"""Plain text for the terminal: word-wrapped paragraphs and tables with a rule under the header.

The layout is the one the reports always had (it was rich's SIMPLE_HEAD table, whose column widths
render.column_widths already decided): importing rich and laying a table out with it took about half of
a cached report's 0.1 s, so these few rules are written here instead. Text is measured in terminal
cells (a wide East Asian character takes two, a combining mark none).
"""
from __future__ import annotations

import re
import unicodedata

_WORD = re.compile(r"\s*\S+\s*")
# Carriage returns, backspaces and other C0/C1 controls would move the terminal's cursor: a name
# recorded in a trace must not redraw the report.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: str) -> str:
    return _CONTROL.sub("", text)


def cell_len(text: str) -> int:
    if text.isascii():
        return len(text)
    return sum(_char_cells(ch) for ch in text)


def _char_cells(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def crop(text: str, width: int) -> str:
    """The longest start of text that fits in width cells."""
    if text.isascii():
        return text[:width]
    used = 0
    for i, ch in enumerate(text):
        used += _char_cells(ch)
        if used > width:
            return text[:i]
    return text


def ellipsize(text: str, width: int) -> str:
    if cell_len(text) <= width:
        return text
    kept = crop(text, width - 1)   # a wide character that would straddle the cut leaves a blank
    return kept + " " * (width - 1 - cell_len(kept)) + "…"


def ellipsize_middle(text: str, width: int) -> str:
    """Text cut in the middle, its start and end kept: names differ most at their end (two call sites of one file,
    `…:copy_to_device` and `…:vision_inputs_to_device`, read alike when both are cut at the end)."""
    if cell_len(text) <= width or width < 8:
        return ellipsize(text, width)
    head = crop(text, (width - 1) // 3)
    tail = crop(text[::-1], width - 1 - cell_len(head))[::-1]
    return head + "…" + tail + " " * (width - 1 - cell_len(head) - cell_len(tail))


def _fold(word: str, width: int) -> list[str]:
    """A word wider than a line, cut into pieces of at most width cells."""
    pieces = []
    while word:
        piece = crop(word, width) or word[0]
        pieces.append(piece)
        word = word[len(piece):]
    return pieces


def wrap_line(line: str, width: int) -> list[str]:
    """One line (no newline) broken before words that would pass width; a word wider than a whole line
    is cut into pieces. A word's trailing blanks do not count against the width."""
    breaks: list[int] = []
    used = 0
    for m in _WORD.finditer(line):
        start, word = m.start(), m.group()
        if cell_len(word.rstrip()) <= width - used:
            used += cell_len(word)
        elif cell_len(word.rstrip()) > width:
            pieces = _fold(word, width)
            for piece in pieces[:-1]:
                if start:
                    breaks.append(start)
                start += len(piece)
            if start:
                breaks.append(start)
            used = cell_len(pieces[-1])
        elif used and start:
            breaks.append(start)
            used = cell_len(word)
    bounds = [0] + breaks + [len(line)]
    return [crop(line[a:b], width) for a, b in zip(bounds, bounds[1:])]


def wrap(text: str, width: int) -> list[str]:
    """Text broken into lines of at most width cells: at its newlines, then between words."""
    out: list[str] = []
    for line in clean(text).split("\n"):
        out.extend(wrap_line(line.expandtabs(8), width))
    return out


def _pad(text: str, width: int, right: bool) -> str:
    if right:
        text = text.rstrip()   # a wrapped word's trailing blank must not push it off the right edge
    blank = " " * max(0, width - cell_len(text))
    return blank + text if right else text + blank


def table(columns: list[tuple[str, int, bool, bool]], rows: list[list[str]], title: str = "",
          caption: str = "") -> list[str]:
    """Lines of a table. columns: (title, width, wraps, right-aligned[, cut in the middle]). A column that wraps breaks its
    text between words (its cells fit by construction, a long title takes several lines); one that does
    not keeps each line of its text on one line, cut with an ellipsis. Every column has a blank either
    side, the table a blank edge; header cells sit on their last line, body cells on their first."""
    width = sum(c[1] for c in columns) + 3 * len(columns) + 1

    def cell_lines(text: str, w: int, wraps: bool, middle: bool) -> list[str]:
        if wraps:
            return wrap(text, w)
        cut = ellipsize_middle if middle else ellipsize
        return [cut(ln.expandtabs(8), w) for ln in clean(text).split("\n")]

    def row_lines(texts: list[str], bottom: bool) -> list[str]:
        cells = [cell_lines(t, c[1], c[2], len(c) > 4 and c[4]) for t, c in zip(texts, columns)]
        height = max(len(c) for c in cells)
        for c in cells:
            blank = [""] * (height - len(c))
            c[:] = blank + c if bottom else c + blank
        return [" " + " ".join(" " + _pad(c[i], col[1], col[3]) + " " for c, col in zip(cells, columns)) + " "
                for i in range(height)]

    out = wrap(title, width) if title else []
    out.append("")
    out.extend(row_lines([c[0] for c in columns], bottom=True))
    out.append(" " + "─" * (width - 2) + " ")
    for r in rows:
        out.extend(row_lines(r, bottom=False))
    out.append("")
    if caption:
        out.extend(wrap(caption, width))
    return out
