"""Expressions: what each one holds (values.py) and which calls in it are copies (the sinks, checked by flow.py).
Every sub-expression is visited once, so a copy nested anywhere in a statement is seen."""
from __future__ import annotations

import ast
from dataclasses import replace

from .values import (CASTS, CPU_KINDS, CREATE, DERIVED, DTYPES, GAPPY, KEEP, NEW, PINNED_KINDS, REORDER, SEQ_OPS,
                     UNPINNED, V, device_of_unknown, dotted, host_named, is_false, is_true, is_zero, join, kw,
                     short, subscript_view)

SYNC = {"synchronize", "wait", "wait_event", "wait_stream", "item", "tolist", "query"}


class Exprs:
    """Mixed into flow.Flow: needs self.env, self.dev, self.mod, self.cls, self.loop, and the sink/write hooks."""

    def ev(self, node) -> V | None:
        meth = getattr(self, "ev_" + type(node).__name__, None)
        if meth is not None:
            return meth(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.ev(child)
        return None

    # ------------------------------------------------------------------------------------------ loads
    def ev_Name(self, node):
        return self.env.get(node.id)

    def ev_Attribute(self, node):
        key = dotted(node)
        if key is not None and key in self.env:
            return self.env[key]
        attr = node.attr
        base = self.ev(node.value)
        if attr in ("T", "mT", "H", "mH", "data"):
            return self.reordered(base, node) if attr != "data" else base
        if base is not None and base.kind == "obj":
            v = self.mod.obj_attr(base.how, attr)
            return replace(v, root=_rooted(v.root, dotted(node.value)) or key or "") if v is not None else None
        if key is None or attr in ("device", "shape", "dtype"):
            return None
        fact = self.mod.fact(self.cls, key, attr)
        if fact is None:
            return None
        own = key == f"self.{attr}" and fact.root.startswith("self.")   # an alias of another attribute of self
        return replace(fact, root=fact.root if own else key)

    def ev_Subscript(self, node):
        base = self.ev(node.value)
        self.ev(node.slice)
        if base is None:
            return None
        if base.kind == "list":
            return base.elem
        if base.kind in PINNED_KINDS:
            view = subscript_view(node.slice)
            if view == "pageable":
                return V("pageable", node.lineno, "an indexed copy of pinned memory")
            if view == "strided" or base.kind == "strided":
                return replace(base, kind="strided", line=node.lineno, how=f"`{short(node)}`", pin_line=0)
            return base
        return base if base.kind in UNPINNED | {"gpu"} else None

    def ev_List(self, node):
        vals = [self.ev(e) for e in node.elts]
        elem = vals[0] if vals else None
        for v in vals[1:]:
            elem = join(elem, v)
        return V("list", node.lineno, "a Python list", elem=elem, empty=not vals)

    ev_Tuple = ev_Set = ev_List

    def ev_ListComp(self, node):
        for gen in node.generators:
            self.ev(gen.iter)
        names = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        hidden = {k: self.env.pop(k) for k in list(self.env) if k.split(".")[0] in names}   # the loop's own names
        elem = self.ev(node.elt) if hasattr(node, "elt") else None
        self.env.update(hidden)
        return V("list", node.lineno, "a Python list", elem=elem)

    ev_SetComp = ev_GeneratorExp = ev_DictComp = ev_ListComp

    def ev_Lambda(self, node):
        return None

    def ev_IfExp(self, node):
        self.ev(node.test)
        return join(self.ev(node.body), self.ev(node.orelse))

    def ev_BinOp(self, node):
        kinds = {v.kind for v in (self.ev(node.left), self.ev(node.right)) if v is not None}
        if "gpu" in kinds:
            return V("gpu")
        if "ndarray" in kinds:
            return V("ndarray", node.lineno, "a numpy array")
        if kinds & CPU_KINDS:
            return V("pageable", node.lineno, "a CPU tensor computed on the host")
        return V("list", node.lineno, "a Python list") if kinds == {"list"} else None

    def reordered(self, v, node):
        if v is None:
            return None
        if v.kind == "pinned":
            return replace(v, kind="permuted", line=node.lineno, how=f"`{short(node)}`", pin_line=0)
        return v if v.kind in CPU_KINDS | {"gpu"} else None

    # ------------------------------------------------------------------------------------------ calls
    def ev_Call(self, node):
        f = node.func
        args = [self.ev(a) for a in node.args]
        kws = {k.arg: self.ev(k.value) for k in node.keywords}
        if isinstance(f, ast.Attribute):
            mod = dotted(f.value)
            if mod is not None and mod.split(".")[0] in self.mod.torch:
                return self.torch_call(mod, f.attr, node, args)
            if mod is not None and mod.split(".")[0] in self.mod.numpy:
                mapped = f.attr == "memmap" or f.attr == "load" and kw(node, "mmap_mode") is not None \
                    and not is_false(kw(node, "mmap_mode"))
                return V("file_backed" if mapped else "ndarray", node.lineno, f"`{mod}.{f.attr}`")
            if f.attr in ("load_file", "safe_open") and self.mod.safetensors:
                return self.safetensors(f.attr, node)
            own = self.mod.method_of(self.cls, f.attr) if mod == "self" else None
            if own is not None:
                return self.mod.summary(own, self.cls)
            return self.method(self.ev(f.value), f.attr, node, args, kws)
        if isinstance(f, ast.Name):
            if f.id in ("list", "tuple", "sorted"):
                return V("list", node.lineno, "a Python list")
            if f.id in ("load_file", "safe_open") and self.mod.safetensors:
                return self.safetensors(f.id, node)
            if self.mod.known_class(f.id):
                return V("obj", node.lineno, f.id)
            helper = self.mod.funcs.get(f.id)
            return self.mod.summary(helper, None) if helper is not None else None
        self.ev(f)
        return None

    def torch_call(self, mod, m, node, args):
        line = node.lineno
        if mod not in self.mod.torch:   # torch.cuda.*, torch.nn.functional.* ...
            if m == "synchronize":
                self.synced()
            return None
        out = kw(node, "out")
        if out is not None:   # the result is the buffer it was written into
            v = self.ev(out)
            self.written(v, node)
            return v
        if m in DERIVED:   # from the tensors it is given (constants are dims, scalars)
            seq = args[0] if args and args[0] is not None and args[0].kind == "list" else None
            parts = [a for a, n in zip(args, node.args) if not isinstance(n, ast.Constant)] if m not in SEQ_OPS \
                else [] if seq is None or seq.empty else [seq.elem]
            kinds = {p.kind if p is not None else None for p in parts}
            return V("gpu") if "gpu" in kinds else (V("pageable", line, f"`torch.{m}` on the host")
                                                    if parts and kinds <= CPU_KINDS else None)
        if m == "from_file" or m == "load" and not is_false(kw(node, "mmap")) and kw(node, "mmap") is not None:
            return V("file_backed", line, f"`torch.{m}`")
        if m not in CREATE:
            return None
        if m in ("from_numpy", "frombuffer"):
            if args and args[0] is not None and args[0].kind == "file_backed":
                return args[0]
            src = args[0] if args else None
            return src if src is not None and src.kind in PINNED_KINDS else V("pageable", line, f"`torch.{m}`")
        dev_node, pin = kw(node, "device"), kw(node, "pin_memory")
        dev = self.device_of(dev_node) if dev_node is not None else "cpu"
        if dev != "cpu":
            if m in ("tensor", "as_tensor", "asarray") and node.args and self.host_data(node.args[0], args[0]) \
                    and (dev == "cuda" or not device_of_unknown(dev_node, self)):
                self.device_build(node)
            return V("gpu")
        if pin is not None and not is_false(pin):
            return self.pinned_here(node, f"`torch.{m}(..., pin_memory=...)`")
        if m.endswith("_like") or m in ("as_tensor", "asarray"):
            base = args[0] if args else None
            if base is None:
                return None
            if m.endswith("_like"):
                return V("gpu") if base.kind == "gpu" else V("pageable", line, f"`torch.{m}`")
            return base if base.kind in CPU_KINDS | {"gpu"} else V("pageable", line, f"`torch.{m}`")
        return V("pageable", line, f"`torch.{m}` without pin_memory=True")

    def method(self, obj, m, node, args, kws):
        line = node.lineno
        if m == "pin_memory":
            return self.pinned_here(node, "`.pin_memory()`")
        if m in SYNC:
            self.synced()
            return V("list", line) if m == "tolist" else None
        if m in ("to", "cuda"):
            return self.to_call(obj, m, node, args)
        if m == "copy_":
            src = args[0] if args else None
            nb = is_true(kw(node, "non_blocking")) or (len(node.args) > 1 and is_true(node.args[1]))
            host_dst = obj is not None and obj.kind in CPU_KINDS or obj is None and host_named(node.func.value)
            if host_dst:
                self.written(obj, node)
            elif nb:
                self.copied(src, node, "copy_", node.func.value)
            return obj
        if obj is None:
            return None
        if obj.kind == "obj" and obj.how == "safe_open" and m in ("get_tensor", "get_slice"):
            return V("file_backed", line, "`safe_open(...).get_tensor`")
        if obj.kind == "list" and m in ("append", "insert", "extend") and args and dotted(node.func.value):
            new = args[-1].elem if m == "extend" and args[-1] is not None and args[-1].kind == "list" else args[-1]
            self.env[dotted(node.func.value)] = replace(obj, elem=new if obj.empty else join(obj.elem, new),
                                                        empty=False)
            return None
        if obj.kind == "file_backed":
            return obj if m in KEEP | GAPPY | REORDER | {"contiguous", "numpy", "narrow", "select"} else \
                V("pageable", line, f"`.{m}()` of file-backed memory")
        if m in NEW:   # like the object unless told otherwise
            pin, dev = kw(node, "pin_memory"), kw(node, "device")
            if dev is not None:
                return V("gpu") if self.device_of(dev) != "cpu" else V("pageable", line, f"`.{m}()`")
            if pin is not None and not is_false(pin):
                return self.pinned_here(node, f"`.{m}(..., pin_memory=...)`")
            return V("gpu") if obj.kind == "gpu" else V("pageable", line, f"`.{m}()`")
        if m.endswith("_") and not m.startswith("_"):
            self.written(obj, node)
            return obj
        if obj.kind == "gpu":
            return obj
        if obj.kind in ("ndarray", "list"):
            return V("ndarray", line, "a numpy array") if obj.kind == "ndarray" else None
        if m in REORDER:
            return self.reordered(obj, node)
        if obj.kind in PINNED_KINDS:
            if m in GAPPY or m in ("narrow", "select") and not (node.args and is_zero(node.args[0])):
                return replace(obj, kind="strided", line=line, how=f"`{short(node)}`", pin_line=0)
            if m in KEEP or m in ("narrow", "select", "numpy", "contiguous") and obj.kind == "pinned":
                return obj
            if m in CASTS:
                return None   # a no-op when the dtype is already that one
            return V("pageable", line, f"`.{m}()` of pinned memory (a new, pageable tensor)")
        return obj if m in KEEP | CASTS | GAPPY else V("pageable", line, f"`.{m}()` of a pageable tensor")

    def safetensors(self, name, node):
        """safetensors' load_file (a dict of mapped tensors) and safe_open (a handle whose get_tensor maps one)."""
        if name == "safe_open":
            return V("obj", node.lineno, "safe_open")
        return V("file_backed", node.lineno, "`safetensors load_file`")

    def to_call(self, obj, m, node, args):
        dev_node = kw(node, "device") or (node.args[0] if node.args else None)
        dev = "cuda" if m == "cuda" else self.device_of(dev_node) if dev_node is not None else "dtype"
        if dev in ("dtype", "cpu"):
            if obj is None or dev == "cpu" and obj.kind == "gpu":
                return V("pageable", node.lineno, "`.to('cpu')`") if obj is not None else None
            return obj if obj.kind != "pinned" or dev == "cpu" else None
        if is_true(kw(node, "non_blocking")):
            self.copied(obj, node, "to", None)
        return V("gpu")

    def device_of(self, node) -> str | None:
        """cpu, cuda, dtype (no device: `.to(torch.float16)`), or None: unknown, taken as an accelerator."""
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return "cpu" if node.value.lower().startswith(("cpu", "meta")) else "cuda"
            return "cuda" if isinstance(node.value, int) else None
        if isinstance(node, ast.Call) and dotted(node.func) in {f"{t}.device" for t in self.mod.torch}:
            return self.device_of(node.args[0]) if node.args else None
        key = dotted(node)
        if key is not None:
            if key in self.dev:
                return self.dev[key]
            last = key.rsplit(".", 1)[-1]
            if "dtype" in last.lower() or last in DTYPES and key.split(".")[0] in self.mod.torch:
                return "dtype"
            if last == "device" and "." in key:
                v = self.ev(node.value)
                return None if v is None else "cuda" if v.kind == "gpu" else "cpu"
        v = self.ev(node)
        return None if v is None else "cuda" if v.kind == "gpu" else "cpu" if v.kind in CPU_KINDS else None

    def host_data(self, node, v) -> bool:
        if isinstance(node, ast.Constant) or isinstance(node, (ast.List, ast.Tuple)) and not node.elts or \
                isinstance(node, ast.Tuple) and all(isinstance(e, ast.Constant) for e in node.elts):
            return False   # a scalar, an empty list (no bytes), or a shape-like tuple of constants
        return v is not None and v.kind in UNPINNED | {"list"}

    def pinned_here(self, node, how):
        per_step = self.loop > 0 and not self.setup and not self.lazy
        return V("pinned", node.lineno, how, pin_line=node.lineno if per_step else 0,
                 pin_col=node.col_offset if per_step else 0)


def _rooted(root: str, base: str | None) -> str:
    """A class's alias (`self.np = self.cpu.numpy()`: root `self.cpu`) seen through an object (`self.pos`):
    `self.pos.cpu`."""
    return base + root[4:] if base and root.startswith("self.") else ""
