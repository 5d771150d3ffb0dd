"""The one place a string from a trace is made safe for an output (docs/security.md).

NVTX names, Python file and function names, process names, memory-kind labels and the report's own file
name belong to whoever made the trace: in CI, whoever opened the pull request. Each output has its own
dangers, and each gets one function here; the renderers call nothing else on such strings:

- terminal / CI log (`terminal`): controls, newlines, bidi overrides and other invisible format characters
  become visible escapes (`\\x1b`, `\\n`, `\\u202e`), so a name is one line that cannot move the cursor,
  retitle the window or hide text; `##[` (the runner's legacy command marker, read anywhere in a line)
  becomes `#\\x23[`. `log_lines` then guards whole outputs: a line a GitHub runner would read as a
  workflow command (`::` after leading blanks, which wrapping a long name can produce) starts `\\x3a:`.
- GitHub annotations (`annotation_data`, `annotation_property`): the runner's own escapes (%25 %0D %0A,
  and %3A %2C in properties) over terminal-safe text.
- Markdown (`markdown`, `markdown_code`): one line, HTML's `&` and `<` as entities, Markdown's inline
  syntax backslashed, GitHub's autolinks, @mentions and #123 references broken by a zero-width space
  (`&#8203;`); or a code span, where nothing is interpreted.
- XML (`xml`): terminal-safe text (XML 1.0 forbids most controls); ElementTree escapes the rest.
- CSV (`csv_cell`): terminal-safe text, and a cell a spreadsheet would read as a formula (`=`, `+`, `-`,
  `@`) starts with `'`.
- JSON (`json_text`): the data stays exact; characters a terminal would act on, and `##[`, are written
  as JSON `\\u` escapes.
- HTML (`html`): escaped text with the same visible escapes as the terminal; `plot_label` for the text
  matplotlib draws into the page's figures.
"""
from __future__ import annotations

import html as _html
import re

# C0/C1 controls and DEL; soft hyphen, Arabic letter mark, Mongolian vowel separator, zero-width and
# directional marks/embeddings/overrides/isolates, line/paragraph separators, invisible operators, BOM,
# interlinear annotations, noncharacters U+FFFE/F, lone surrogates, Unicode tag characters.
_BEYOND_C0 = ("\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\ufffe\uffff"
              "\ud800-\udfff\U000e0000-\U000e007f")
_INVISIBLE = re.compile(f"[\x00-\x1f{_BEYOND_C0}]")
_JSON_RAW = re.compile(f"[{_BEYOND_C0}]")   # json.dumps escapes C0 itself; raw C0 there is its own layout
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
LEGACY_COMMAND = "##["


def _escape(ch: str) -> str:
    c = ord(ch)
    return _NAMED.get(ch) or (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" if c < 0x10000 else f"\\U{c:08x}")


def visible(s) -> str:
    """Invisible and cursor-moving characters as visible escapes: one line, nothing hidden."""
    s = "" if s is None else str(s)
    if s.isascii() and s.isprintable():
        return s
    return _INVISIBLE.sub(lambda m: _escape(m.group()), s)


def terminal(s) -> str:
    """A trace string for a terminal, a CI log or a plain-text file."""
    return visible(s).replace(LEGACY_COMMAND, "#\\x23[")


def log_lines(text: str) -> str:
    """A whole text output, made so that no line is a GitHub workflow command: a line that starts with
    `::` after blanks (a wrapped table cell can put a name's `::` there) starts `\\x3a:` instead. Strings
    from the trace went through `terminal` (or their format's function) already."""
    if "::" not in text and LEGACY_COMMAND not in text:
        return text
    out = []
    for line in text.split("\n"):
        body = line.lstrip()
        if body.startswith("::"):
            line = line[:len(line) - len(body)] + "\\x3a" + body[1:]
        out.append(line.replace(LEGACY_COMMAND, "#\\x23["))
    return "\n".join(out)


def annotation_data(s: str) -> str:
    """The message of a workflow command (its text must already be terminal-safe where it came from a
    trace; our own newlines become the runner's %0A)."""
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def annotation_property(s) -> str:
    """A workflow command's property value (file=, title=): a `,` or `:` would end or forge one."""
    return annotation_data(terminal(s)).replace(":", "%3A").replace(",", "%2C")


# Markdown's inline syntax; `_` only where it can open or close emphasis (not inside a word: snake_case
# names stay as they are).
_MD_SPECIAL = re.compile(r"([\\`*\[\]|~#]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z]))")


# What GitHub would turn into a link or a notification by itself: GFM's autolinks (`scheme://`, `www.`, an
# e-mail address; a bare domain is not one), @mentions (users, teams), and references (#123, GH-123,
# owner/repo#123). A zero-width space, written as the entity &#8203;, goes where it breaks each one: the
# renderer sees no `://`, `www.`, `@name` or `#123`, while the text reads the same.
_AUTOLINK = re.compile(r"(?<=:)(?=//)|(?<=[Ww]{3})(?=\.)|(?<=@)|(?<=#)(?=[0-9])|(?<=\b[Gg][Hh]-)(?=[0-9])")
ZERO_WIDTH = "&#8203;"


def markdown(s) -> str:
    """A trace string as Markdown text (a table cell, a list item, a heading): one line, no raw HTML, no
    emphasis, links, code spans or table breaks of its own, and nothing GitHub links or notifies by itself."""
    s = terminal(s).replace("&", "&amp;").replace("<", "&lt;")
    return _AUTOLINK.sub(ZERO_WIDTH, _MD_SPECIAL.sub(r"\\\1", s))


def markdown_code(s) -> str:
    """A trace string as a Markdown code span (shown literally: no HTML, no syntax), or as escaped text
    when it holds a backtick, which would end the span."""
    s = terminal(s)
    return f"`{s}`" if "`" not in s else markdown(s)


def xml(s) -> str:
    """A trace string for an XML attribute or text: characters XML 1.0 does not allow (and newlines, so a
    name stays one line) as visible escapes; ElementTree escapes & < > and quotes."""
    return terminal(s)


_FORMULA = ("=", "+", "-", "@")


def csv_cell(v):
    """A CSV cell: numbers as they are; text on one line, and quoted with ' where a spreadsheet would run it
    as a formula."""
    if v is None or isinstance(v, (bool, int, float)):
        return v
    s = terminal(v)
    return "'" + s if s.startswith(_FORMULA) else s


def json_text(text: str) -> str:
    """JSON as json.dumps wrote it (ensure_ascii=False), with what a terminal or a CI runner would act on
    written as \\u escapes: the parsed data is the same. Such characters only occur inside strings (the
    structure is printable ASCII), and `#` is escaped only where it starts `##[`."""
    text = text.replace(LEGACY_COMMAND, "\\u0023#[")
    if text.isascii() and "\x7f" not in text:
        return text
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}" if ord(m.group()) < 0x10000
                          else "".join(f"\\u{ord(u):04x}" for u in _utf16(m.group())), text)


def _utf16(ch: str) -> tuple[str, str]:
    c = ord(ch) - 0x10000
    return chr(0xD800 + (c >> 10)), chr(0xDC00 + (c & 0x3FF))


class Trusted(str):
    """Text nsysh2d wrote itself (a fix, a rule): a format's escaping leaves it as it is."""


class Line:
    """A line of our own words with strings from the trace in it: `template` is ours, each arg is escaped
    for the output it goes to unless it is Trusted. str() gives it unescaped (for `terminal`, which
    escapes whole lines: our words hold nothing it changes)."""

    def __init__(self, template: str, *args):
        self.template, self.args = template, args

    def render(self, esc) -> str:
        return self.template.format(*(a if isinstance(a, Trusted) else esc(a) for a in self.args))

    def __str__(self) -> str:
        return self.template.format(*self.args)

    def __eq__(self, other) -> bool:
        return isinstance(other, Line) and (self.template, self.args) == (other.template, other.args)

    def __hash__(self) -> int:
        return hash((self.template, self.args))


def plot_label(s) -> str:
    """A trace string as a matplotlib label: terminal-safe, and `$` kept literal (a pair of them would be
    parsed as math, and a bad formula fails the whole figure)."""
    return terminal(s).replace("$", "\\$")


def svg_id(s) -> str:
    """A trace string in an SVG element's id (matplotlib's gid), which the page also repeats unescaped in
    data-series: terminal-safe, and none of the characters that would end or open an attribute or a tag."""
    return re.sub("[\"'<>&\\s]", "_", terminal(s))


def html(s) -> str:
    """A trace string as HTML text or an attribute value."""
    return _html.escape(terminal(s))
