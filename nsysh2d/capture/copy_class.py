"""What a copy from CPU memory to a GPU does, by the rules PyTorch's CUDA copy follows
(aten/src/ATen/native/cuda/Copy.cu): shared by the copy hook of a capture (site_hook.py) and the runtime checker
(runtime.py). Standard library only: it runs wherever torch does."""
from __future__ import annotations

import bisect


def dense(shape, strides) -> bool:
    """Non-overlapping and dense: the elements fill one block of memory in some order of the dims."""
    dims = sorted((st, n) for n, st in zip(shape, strides) if n != 1)
    expected = 1
    for st, n in dims:
        if st != expected:
            return False
        expected *= n
    return True


def source_class(src_shape, src_strides, src_dtype, pinned: bool, dst_shape, dst_strides, dst_dtype) -> str:
    """What a non_blocking H2D copy of this source into this destination does (see the module's rules)."""
    if not pinned:
        return "pageable"
    direct = (src_dtype == dst_dtype and tuple(src_shape) == tuple(dst_shape)
              and tuple(src_strides) == tuple(dst_strides) and dense(src_shape, src_strides))
    if direct:
        return "pinned"
    # The temporary path: src.expand_as(dst).contiguous() is src itself only when that view is contiguous
    # (expand_as gives new leading dims and broadcast dims stride 0).
    lead = len(dst_shape) - len(src_shape)
    expanded = [0] * lead + [st if n == dst_shape[lead + i] else 0 for i, (n, st) in enumerate(zip(src_shape, src_strides))]
    return "pinned" if _contiguous(dst_shape, expanded) else "pinned_strided"


def contiguous_strides(shape) -> tuple[int, ...]:
    out, expected = [], 1
    for n in reversed(tuple(shape)):
        out.append(expected)
        expected *= max(n, 1)
    return tuple(reversed(out))


def _contiguous(shape, strides) -> bool:
    expected = 1
    for n, st in reversed(list(zip(shape, strides))):
        if n != 1 and st != expected:
            return False
        expected *= n
    return True


class FileMaps:
    """Which addresses of this process are file mappings, from /proc/self/maps, read again only when an address
    falls outside every mapping read so far (new mappings)."""

    def __init__(self, path="/proc/self/maps"):
        self.path, self.starts, self.spans = path, [], []

    def _read(self) -> None:
        spans = []
        try:
            with open(self.path) as f:
                for line in f:
                    parts = line.split(None, 5)
                    lo, hi = (int(x, 16) for x in parts[0].split("-"))
                    inode = parts[4] if len(parts) > 4 else "0"
                    name = parts[5].strip() if len(parts) > 5 else ""
                    spans.append((lo, hi, inode != "0" and name.startswith("/") and not name.startswith("/dev/")))
        except OSError:   # no procfs: nothing is known to be file-backed
            spans = []
        spans.sort()
        self.spans, self.starts = spans, [s[0] for s in spans]

    def is_file(self, addr: int) -> bool:
        for again in (False, True):
            if again:
                self._read()
            i = bisect.bisect_right(self.starts, addr) - 1
            if i >= 0 and self.spans[i][0] <= addr < self.spans[i][1]:
                return self.spans[i][2]
        return False
