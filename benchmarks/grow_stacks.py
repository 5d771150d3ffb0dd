#!/usr/bin/env python3
"""A copy of a real export whose CUDA_CALLCHAINS table is grown to millions of rows, as a long capture with
`--cudabacktrace` has them: the stacks of calls that are not copies (new ids, never referenced by a copy call), so
every figure of the report stays the same while reading the stack table costs more. For `benchmarks/ab.py` on the
native-stack read (source/stacks.py).

usage: grow_stacks.py OUT.sqlite [--base tests/data/h200/qwen3vl-before.sqlite] [--times 40]
"""
from __future__ import annotations

import argparse
import shutil
import sqlite3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--base", default="tests/data/h200/qwen3vl-before.sqlite")
    ap.add_argument("--times", type=int, default=40, help="the table's rows become this many times as many")
    args = ap.parse_args()
    shutil.copy(args.base, args.out)
    con = sqlite3.connect(args.out)
    top = con.execute("SELECT max(id) FROM CUDA_CALLCHAINS").fetchone()[0]
    cols = [r[1] for r in con.execute("PRAGMA table_info(CUDA_CALLCHAINS)")]
    for k in range(1, args.times):
        sel = ", ".join(f"id + {k * (top + 1)}" if c == "id" else f'"{c}"' for c in cols)
        con.execute(f'INSERT INTO CUDA_CALLCHAINS ({", ".join(cols)}) SELECT {sel} FROM CUDA_CALLCHAINS WHERE id <= {top}')
    con.commit()
    print(f"{args.out}: CUDA_CALLCHAINS {con.execute('SELECT count(*) FROM CUDA_CALLCHAINS').fetchone()[0]} rows")
    con.close()


if __name__ == "__main__":
    main()
