"""What an expression holds, as far as one function's text tells: the abstract values of lint's data flow.

A value is a `V` (or None: unknown, never flagged). Kinds:
  pageable  a CPU tensor in pageable memory (torch.from_numpy, torch.tensor/zeros/... without pin_memory, a new
            tensor computed from a CPU one: `.clone()`, arithmetic, `.contiguous()` of a strided view)
  ndarray   a numpy array (pageable)       list   a Python list or tuple (host data)
  maybe     pageable on some paths, pinned on others (a branch that pins; flagged like pageable)
  file_backed  memory mapped from a file (safetensors' load_file/get_tensor, torch.load(mmap=True), np.memmap,
            np.load(mmap_mode=...), torch.from_file): pageable, and each first touch may read the disk
  pinned    contiguous pinned memory (`.pin_memory()`, `pin_memory=<anything but False>`, a known pinned buffer,
            a view of one that stays contiguous: leading slices, integer rows)
  strided   a view of pinned memory with gaps (`buf[:, :n]`, `buf[::2]`, `.expand`): every copy of it goes through
            a pageable temporary
  permuted  a dense reordering of pinned memory (`.t()`, `.T`, `.mT`, `.transpose`, `.permute`): `.to()` keeps its
            strides (no temporary), but `copy_` into a differently laid out destination needs one
  gpu       a tensor on an accelerator
  obj       an instance of a class of the run (`how` names it): its attributes are the class's facts
`root` names the pinned buffer a view belongs to (for writes after an in-flight copy); `pin_line` marks memory
pinned by this very code inside a loop (a pinned allocation whenever the caching host allocator grows).
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace

CPU_KINDS = {"pageable", "ndarray", "maybe", "file_backed", "pinned", "strided", "permuted"}
UNPINNED = {"pageable", "ndarray", "maybe", "file_backed"}
PINNED_KINDS = {"pinned", "strided", "permuted"}
CREATE = {"tensor", "as_tensor", "asarray", "zeros", "ones", "empty", "full", "arange", "rand", "randn", "randint",
          "linspace", "eye", "empty_strided", "zeros_like", "ones_like", "empty_like", "full_like", "rand_like",
          "randn_like", "from_numpy", "frombuffer", "Tensor", "LongTensor", "IntTensor", "FloatTensor", "BoolTensor"}
# Ops that compute from their inputs: on the host when every input is (pageable), on the GPU when one is there.
DERIVED = {"cat", "concat", "concatenate", "stack", "hstack", "vstack", "where", "repeat_interleave", "cumsum",
           "index_select", "gather", "masked_select", "flatten", "sort", "argsort", "unique", "nonzero", "clamp"}
SEQ_OPS = {"cat", "concat", "concatenate", "stack", "hstack", "vstack"}
NEW = {"new_empty", "new_zeros", "new_ones", "new_full", "new_tensor"}
REORDER = {"t", "transpose", "permute", "swapaxes", "swapdims", "movedim", "moveaxis", "adjoint"}
GAPPY = {"expand", "expand_as", "unfold", "as_strided", "diagonal", "broadcast_to"}
KEEP = {"view", "view_as", "unsqueeze", "squeeze", "detach", "flatten", "reshape", "requires_grad_", "data"}
CASTS = {"long", "int", "float", "half", "bfloat16", "double", "bool", "short", "byte", "char", "type"}
# Run once, before the steps (by a function's name, or an enclosing one's): a pin, a pinned allocation or a
# synchronous build here is not paid per step.
SETUP = re.compile(r"_*(init|setup|build|load|create|make|alloc|register|warm|capture|compile|reset|from_|"
                   r"configure|prepare_model|profile_run|dummy|probe|ensure|lazy|test_?)|.*(loader|loading|warmup)",
                   re.IGNORECASE)
DTYPES = {"float", "float16", "float32", "float64", "half", "double", "bfloat16", "int", "int8", "int16", "int32",
          "int64", "long", "short", "uint8", "bool", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2",
          "uint16", "uint32", "uint64"}


@dataclass(frozen=True)
class V:
    kind: str
    line: int = 0          # where it was made (for messages)
    how: str = ""          # what made it, in words
    root: str = ""         # the pinned buffer a view belongs to (dotted name)
    pin_line: int = 0      # pinned by `.pin_memory()`/`pin_memory=` inside a loop of this function (0: no)
    pin_col: int = 0
    elem: "V | None" = None   # a list's elements (None: unknown)
    empty: bool = False       # a list with no element yet


def join(a: V | None, b: V | None, pin_wins: bool = False) -> V | None:
    """The value after two paths meet. pinned/pageable gives `maybe` (flagged) unless the branch only tested
    whether pinning is available (`if pin_memory:`, `if is_pin_memory_available():`), where the pin wins."""
    if a is None or b is None:
        return None
    if a == b or a.kind == b.kind and a.kind not in ("pinned", "obj", "list") or a.kind == b.kind == "obj" and a.how == b.how:
        return a
    kinds = {a.kind, b.kind}
    if kinds == {"list"}:
        return a if b.empty else b if a.empty else replace(a, elem=join(a.elem, b.elem), empty=False)
    if kinds <= UNPINNED:
        return a if a.kind == "maybe" else b if b.kind == "maybe" else a
    if kinds <= PINNED_KINDS:
        return a if a.kind != "pinned" else b if b.kind != "pinned" else (a if a.root == b.root else replace(a, root=""))
    if kinds <= CPU_KINDS:
        pin, page = (a, b) if a.kind in PINNED_KINDS else (b, a)
        if pin_wins:
            return pin
        return V("maybe", page.line, page.how)
    return None


def dotted(node) -> str | None:
    """`self.buf.cpu` -> "self.buf.cpu"; None for anything but names and attribute chains."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def kw(call: ast.Call, name: str):
    for k in call.keywords:
        if k.arg == name:
            return k.value
    return None


def is_true(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def is_false(node) -> bool:
    return isinstance(node, ast.Constant) and node.value in (False, None)


def mentions_pinning(test) -> bool:
    """A branch that only asks whether pinning (or CUDA) is available: its false side runs where no H2D copy
    happens or pinning is impossible, so a pin under it counts as a pin."""
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if not isinstance(test, (ast.Name, ast.Attribute, ast.Call)):
        return False
    text = ast.unparse(test).lower()
    return "pin" in text or "is_available" in text


def subscript_view(index) -> str:
    """pinned (a contiguous view: integer rows, then one slice, then whole dims), strided (gaps), or pageable
    (advanced indexing with a list gathers into a new tensor)."""
    items = list(index.elts) if isinstance(index, ast.Tuple) else [index]
    kept = False   # a dimension was kept (a slice or an Ellipsis): every later one must be whole
    for it in items:
        if isinstance(it, (ast.List, ast.ListComp)):
            return "pageable"
        if isinstance(it, ast.Constant) and it.value is None:
            continue
        if isinstance(it, ast.Constant) and it.value is Ellipsis:
            kept = True
            continue
        if isinstance(it, ast.Slice):
            if it.step is not None and not (isinstance(it.step, ast.Constant) and it.step.value == 1):
                return "strided"
            if kept and not (it.lower is None and it.upper is None):
                return "strided"
            kept = True
        elif kept:   # an integer (or index tensor) after a kept dimension: a column
            return "strided"
    return "pinned"


HOST_NAME = ("cpu", "host", "pinned", "np", "numpy", "staging")


def device_of_unknown(dev_node, flow) -> bool:
    """`device=t.device` where nothing says t is on the GPU (it may be a CPU tensor: a host-side helper)."""
    return isinstance(dev_node, ast.Attribute) and dev_node.attr == "device" and \
        not (isinstance(dev_node.value, ast.Name) and dev_node.value.id == "self") and flow.ev(dev_node.value) is None


def short(node) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


def is_zero(node) -> bool:
    return isinstance(node, ast.Constant) and node.value in (0, -0)


def host_named(node) -> bool:
    """A destination whose own name says it is host memory (`self.pos_cpu`, `pinned_buf`, `host_ids`): a copy into
    it is host-to-host."""
    key = dotted(node.value if isinstance(node, ast.Subscript) else node)
    if key is None:
        return False
    last = key.rsplit(".", 1)[-1].lower()
    return any(p == last or last.startswith(p + "_") or last.endswith("_" + p) or f"_{p}_" in last
               for p in HOST_NAME)
