"""Stream the events of a Kineto (torch.profiler) chrome trace, `.json` or gzip-compressed, in bounded memory.

A trace is one JSON object: a few metadata keys and `traceEvents`, an array that can hold millions of events
(1-2 GB files are reported by vLLM users). json.load would hold the whole document as Python objects (about
10x the file); here the text is read in chunks and each event is decoded alone (the C scanner's raw_decode), so
memory holds one chunk and what the caller keeps of each event. Any key order and any layout (one event per
line as torch writes it, or none at all) reads the same.
"""
from __future__ import annotations

import codecs
import gzip
import json
import re
import sys
import zlib

from ..errors import BadInput

CHUNK = 1 << 22   # 4 MiB of text per read
MAX_VALUE = 1 << 26   # one event (or metadata value) of more than 64 MiB of text is no trace's: refused
# A gzip stream may expand to 256 MiB of text, and past that to 100x the compressed bytes read (real traces: 9-30x);
# more is a compressed bomb, refused before its text costs minutes (docs/robustness.md).
EXPANSION_FLOOR = 1 << 28
MAX_EXPANSION = 100
GZIP_MAGIC = b"\x1f\x8b"
_NON_BLANK = re.compile(r"[^ \t\r\n\ufeff]")   # a BOM reads as blank


def names_trace_events(path: str) -> bool:
    """Does the file's first MiB name traceEvents (a folder's JSON files that do not are not traces)?"""
    return b'"traceEvents"' in _head(path)


def _head(path: str, size: int = 1 << 20) -> bytes:
    try:
        with open(path, "rb") as f:
            head = f.read(2)
            f.seek(0)
            raw = gzip.GzipFile(fileobj=f) if head == GZIP_MAGIC else f
            return raw.read(size)
    except (OSError, EOFError, zlib.error):
        return b""


def sniff(path: str) -> bool:
    """Is this (by content, not by name) a JSON object, plain or gzip-compressed: a Kineto trace or meant as one
    (read() then says what is missing)? SQLite exports and nsys reports never start with '{'. Its first 4 KiB
    only: asked of every input (a cached report's too), and a gzip stream damaged further on is the reader's to
    name, not a reason to call the file something else."""
    stripped = _head(path, 4096).lstrip(b" \t\r\n\xef\xbb\xbf")
    return stripped.startswith(b"{")


class _Text:
    """The file as text, chunk by chunk, with a buffer the parser consumes from the left."""

    def __init__(self, path: str, progress=None):
        self.path = path
        f = open(path, "rb")
        self.raw = f
        self.gz = f.read(2) == GZIP_MAGIC
        self.stream = gzip.GzipFile(fileobj=f) if self.gz else f
        f.seek(0)
        self.read_bytes = 0
        self.decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.progress = progress

    def more(self, size: int = CHUNK) -> bool:
        if self.eof:
            return False
        try:
            data = self.stream.read(size)
        except (EOFError, zlib.error, gzip.BadGzipFile) as e:
            raise BadInput(f"{self.path}: damaged or truncated gzip stream ({e or 'ends early'})") from None
        try:
            text = self.decoder.decode(data, final=not data)
        except UnicodeDecodeError:
            raise BadInput(f"{self.path}: not UTF-8 text (not a Kineto JSON trace)") from None
        if not data:
            self.eof = True
        self.read_bytes += len(data)
        if self.gz and self.read_bytes > max(EXPANSION_FLOOR, MAX_EXPANSION * self.raw.tell()):
            raise BadInput(f"{self.path}: the gzip stream expands past {self.read_bytes >> 20} MiB from "
                           f"{self.raw.tell() >> 10} KiB (more than {MAX_EXPANSION}x): a compressed bomb, not read")
        self.buf = self.buf[self.pos:] + text
        self.pos = 0
        if self.progress:
            self.progress(self.raw.tell())
        return bool(text) or not self.eof

    def skip_ws(self) -> str:
        """The next non-blank character ('' at the end of the file), not consumed."""
        while True:
            m = _NON_BLANK.search(self.buf, self.pos)
            if m:
                self.pos = m.start()
                return self.buf[self.pos]
            self.pos = len(self.buf)
            if not self.more():
                return ""

    def expect(self, chars: str) -> str:
        c = self.skip_ws()
        if not c or c not in chars:
            where = "the end of the file" if not c else repr(c)
            raise BadInput(f"{self.path}: not a Kineto JSON trace (expected {' or '.join(map(repr, chars))}, "
                           f"found {where}{'; truncated?' if not c else ''})")
        self.pos += 1
        return c

    def value(self, decoder=json.JSONDecoder()):
        """The next JSON value, whole (the buffer grows until it holds it: by as much as it holds each time, so a
        value of n characters is decoded O(log n) times, O(n) in all, not once every chunk)."""
        self.skip_ws()
        while True:
            try:
                obj, end = decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as e:
                # Incomplete at the buffer's end: read on. Invalid before it: the file is at fault.
                if not self.eof and self._grow():
                    continue
                raise BadInput(f"{self.path}: invalid JSON ({e.msg} at character {e.pos}"
                               f"{'; truncated?' if self.eof else ''})") from None
            except RecursionError:
                raise BadInput(f"{self.path}: a JSON value nested too deep (more than "
                               f"{sys.getrecursionlimit()} levels): not a Kineto trace event") from None
            except ValueError as e:   # an integer past Python's limit on digits (4,300)
                raise BadInput(f"{self.path}: a number of too many digits ({str(e).split(':')[0]})") from None
            # A number cut by the chunk boundary decodes short: make sure something follows it.
            if end == len(self.buf) and not self.eof and self._grow():
                continue
            self.pos = end
            return obj

    def _grow(self) -> bool:
        pending = len(self.buf) - self.pos
        if pending > MAX_VALUE:
            raise BadInput(f"{self.path}: one JSON value of more than {MAX_VALUE >> 20} MiB (an event that big is "
                           "no Kineto trace's)")
        return self.more(max(CHUNK, pending))

    def close(self) -> None:
        self.raw.close()


def read(path: str, on_event, progress=None) -> dict:
    """Call on_event(event) for every event of traceEvents, in file order; return the other top-level keys."""
    text = _Text(path, progress)
    meta: dict = {}
    seen_events = False
    try:
        text.expect("{")
        if text.skip_ws() == "}":
            text.pos += 1
        else:
            while True:
                key = text.value()
                if not isinstance(key, str):
                    raise BadInput(f"{path}: not a Kineto JSON trace (a key that is not a string)")
                text.expect(":")
                if key == "traceEvents":
                    seen_events = True
                    text.expect("[")
                    if text.skip_ws() == "]":
                        text.pos += 1
                    else:
                        while True:
                            ev = text.value()
                            if isinstance(ev, dict):
                                on_event(ev)
                            if text.expect(",]") == "]":
                                break
                else:
                    meta[key] = text.value()
                if text.expect(",}") == "}":
                    break
        if text.skip_ws():
            raise BadInput(f"{path}: not a Kineto JSON trace (text after the top-level object)")
    finally:
        text.close()
    if not seen_events:
        raise BadInput(f"{path}: JSON without traceEvents (not a Kineto/torch.profiler trace)")
    return meta
