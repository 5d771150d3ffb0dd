"""The bytes a tensor view covers, as sorted [start, end) runs, and whether two views share any (the runtime
checker's in-flight rule: a write into memory a non_blocking copy has not read yet). No torch import: any object
with numel/element_size/shape/stride/data_ptr works."""
from __future__ import annotations


def runs(t) -> list[tuple[int, int]]:
    """The [first byte, end byte) runs of memory a tensor view covers: one per row of a strided view (up to
    4096 rows; beyond that, or with no unit-stride last dim, the span from its first to its last byte)."""
    if not t.numel():
        return []
    size = t.element_size()
    dims = [(n, st) for n, st in zip(t.shape, t.stride()) if n != 1]
    if dims and dims[-1][1] == 1 and len(dims) > 1:
        rows = 1
        for n, _st in dims[:-1]:
            rows *= n
        if rows <= 4096:
            starts = [0]
            for n, st in dims[:-1]:
                starts = [s0 + i * st for s0 in starts for i in range(n)]
            width = dims[-1][0] * size
            return sorted((t.data_ptr() + s0 * size, t.data_ptr() + s0 * size + width) for s0 in starts)
    n = 1 + sum((k - 1) * st for k, st in dims)
    return [(t.data_ptr(), t.data_ptr() + n * size)]


def overlap(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> bool:
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i][0] < b[j][1] and b[j][0] < a[i][1]:
            return True
        if a[i][1] <= b[j][1]:
            i += 1
        else:
            j += 1
    return False
