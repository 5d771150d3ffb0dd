"""nsys's Python backtraces (--python-backtrace=cuda): the frames stored in an NVTX mark's extended payload."""
from __future__ import annotations

import html
import struct


def decode_python_frames(blob: bytes, strings: dict[int, str] | None = None):
    """Frames (function id/name, file id/name, line) of one 'Python Backtrace on CUDA' payload.

    Layout seen in nsys 2025.3 exports: u64 entry count; per entry u64 schema id, u64 size, u64 offset;
    at the offset: u64 thread-state id, u32 thread state, u32 frame count, then per frame three u64
    (function StringId, file StringId, line in the low 32 bits).
    """
    out = []
    if not blob or len(blob) < 8:
        return out
    (n,) = struct.unpack_from("<Q", blob, 0)
    for i in range(min(n, 16)):
        if 8 + 24 * (i + 1) > len(blob):
            break
        _schema, _size, off = struct.unpack_from("<QQQ", blob, 8 + 24 * i)
        if off + 16 > len(blob):
            break
        _tsid, _state, count = struct.unpack_from("<QII", blob, off)
        for k in range(count):
            pos = off + 16 + 24 * k
            if pos + 24 > len(blob):
                break
            fn, fi, line = struct.unpack_from("<QQQ", blob, pos)
            line &= 0xFFFFFFFF
            if strings is not None:
                out.append((html.unescape(strings.get(fn, "?")), html.unescape(strings.get(fi, "?")), line))
            else:
                out.append((fn, fi, line))
    return out
