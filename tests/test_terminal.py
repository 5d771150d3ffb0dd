"""present/terminal.py lays tables and notes out as rich's SIMPLE_HEAD table and Console.print did
(the reports' terminal output before rich was dropped from that path): checked against rich itself
(still installed, for run.py's progress bar) on random text, ASCII and wide/combining characters."""
import io
import random

import pytest
from rich import box
from rich.console import Console
from rich.table import Table

from nsysh2d.present.render import Column, Section, render_sections
from nsysh2d.present.terminal import cell_len, ellipsize, table, wrap

PIECES = ["a", "b", "x", " ", "  ", "-", ">", ".", "1", "\n", "abcdefghijklmnopqrstuvwxyz", ",",
          "é", "e\u0301", "日本", "中x"]


def text(rng, n):
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, n)))


def by_rich(draw, width):
    buf = io.StringIO()
    draw(Console(file=buf, highlight=False, soft_wrap=False, width=width, markup=False, emoji=False))
    return [line.rstrip() for line in buf.getvalue().splitlines()]


@pytest.mark.parametrize("seed", range(4))
def test_wrap_as_rich(seed):
    rng = random.Random(seed)
    for _ in range(300):
        width, s = rng.randint(20, 90), text(rng, 40)
        assert [ln.rstrip() for ln in wrap(s, width)] == by_rich(lambda c: c.print(s), width), (width, s)


@pytest.mark.parametrize("seed", range(4))
def test_table_as_rich(seed):
    rng = random.Random(100 + seed)
    for _ in range(200):
        cols = []
        for _ in range(rng.randint(1, 5)):
            wraps = rng.random() < 0.5
            cols.append((text(rng, 12) or "t", rng.randint(2, 14), wraps, wraps and rng.random() < 0.7))
        rows = [[rng.choice(["1.0 ms", "3", "yes", "12 KiB", "-"])[:w] if wraps else text(rng, 20)
                 for _, w, wraps, _ in cols] for _ in range(rng.randint(0, 4))]
        title, caption = text(rng, 30), (text(rng, 30) if rng.random() < 0.3 else "")

        def draw(c):
            t = Table(title=title or None, title_justify="left", box=box.SIMPLE_HEAD, width=None)
            if caption:
                t.caption, t.caption_justify = caption, "left"
            for name, w, wraps, right in cols:
                t.add_column(name, justify="right" if right else "left", width=w, no_wrap=not wraps,
                             overflow="fold" if wraps else "ellipsis")
            for r in rows:
                t.add_row(*r)
            c.print(t)

        width = sum(w for _, w, _, _ in cols) + 3 * len(cols) + 1
        assert [ln.rstrip() for ln in table(cols, rows, title, caption)] == by_rich(draw, width), (cols, rows)


def test_cells_and_cuts():
    assert cell_len("日本x") == 5 and cell_len("e\u0301") == 1
    assert ellipsize("abcdef", 4) == "abc…"
    assert ellipsize("日本日本", 4) == "日 …"   # the wide character that would straddle the cut leaves a blank


def test_names_from_a_trace_print_as_recorded():
    """A range name is printed as it is (no :emoji: codes replaced, as rich did) and cannot move the
    terminal's cursor (control characters shown as visible escapes, present/safe.py)."""
    s = Section("by NVTX range", [Column("name", "NVTX range"), Column("calls", "calls", "int")],
                [{"name": ":rocket: step\r\x1b[2J", "calls": 3}])
    out = render_sections("table", [s])
    assert ":rocket: step\\r\\x1b[2J" in out
    assert "\r" not in out and "\x1b" not in out
