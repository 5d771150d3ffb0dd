#!/usr/bin/env python3
"""Scale a real nsys export into a large nsys-shaped SQLite for benchmarks.

Keeps the real file's schema, StringIds, enums, metadata and small tables, and regenerates the big
activity tables inside SQLite (no rows move through Python): at --scale 1, 20 M CUDA runtime API rows
(10% cudaMemcpyAsync, 25% kernel launches, the rest other runtime calls), 2 M memcpy activity rows,
5 M kernel rows and 200 k NVTX ranges (steps and per-copy ranges), on 4 threads, 2 streams; about 1.3 GB.
Columns the generator does not set are copied from a template row of the real file.

usage: make_large.py [--base tests/data/h200/qwen3vl-before.sqlite] [--scale 1.0] OUT.sqlite
"""
from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PER_SCALE = {"runtime": 20_000_000, "nvtx_every": 100}


def columns(con, table):
    return [r[1] for r in con.execute(f"PRAGMA table_info({table})")]


def insert_generated(con, table, n, overrides: dict, where_i: str = "1") -> None:
    """INSERT n-ish rows: i runs 0..n-1, rows kept where `where_i`; unset columns from a template row."""
    cols = columns(con, table)
    exprs = [overrides.get(c, f"t.{c}") for c in cols]
    con.execute(f"CREATE TEMP TABLE tmpl_{table} AS SELECT * FROM {table} LIMIT 1")
    con.execute(f"DELETE FROM {table}")
    con.execute(f"""
        WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < {n - 1})
        INSERT INTO {table} ({', '.join(cols)})
        SELECT {', '.join(exprs)} FROM c, tmpl_{table} t WHERE {where_i}""")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--base", default=os.path.join(ROOT, "tests", "data", "h200", "qwen3vl-before.sqlite"))
    ap.add_argument("--scale", type=float, default=1.0)
    args = ap.parse_args(argv)
    n = int(PER_SCALE["runtime"] * args.scale)
    t0 = time.time()
    tmp = args.out + ".tmp"
    shutil.copyfile(args.base, tmp)
    con = sqlite3.connect(tmp)
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("PRAGMA synchronous = OFF")
    ids = {v: i for i, v in con.execute("SELECT id, value FROM StringIds")}
    memcpy_name, launch_name = ids["cudaMemcpyAsync_v3020"], ids["cudaLaunchKernel_v7000"]
    other = ids.get("cudaStreamIsCapturing_v10000", launch_name)
    runtime_class = con.execute("SELECT id FROM ENUM_NSYS_EVENT_CLASS WHERE label = 'CUDA runtime'").fetchone()[0]
    tid0 = con.execute("SELECT min(globalTid) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0]
    pid = (tid0 >> 24) << 24
    # API call i starts at i * 2 us on one of 4 threads; every 10th is a memcpy, 5 of 20 a launch.
    kind = "CASE WHEN i % 10 = 0 THEN 'm' WHEN i % 20 BETWEEN 1 AND 5 THEN 'k' ELSE 'o' END"
    pageable = "((i / 10) % 5 = 0)"
    big = "((i / 10) % 50 = 0)"
    insert_generated(con, "CUPTI_ACTIVITY_KIND_RUNTIME", n, {
        "start": "i * 2000",
        "end": f"i * 2000 + CASE WHEN i % 10 = 0 THEN 3000 + (i * 7919) % 15000 "
               f"+ CASE WHEN {big} AND {pageable} THEN 4000000 ELSE 0 END ELSE 1500 + (i * 31) % 4000 END",
        "eventClass": str(runtime_class), "globalTid": f"{pid} + {tid0 - pid} + (i % 4)",
        "correlationId": "i + 1",
        "nameId": f"CASE {kind} WHEN 'm' THEN {memcpy_name} WHEN 'k' THEN {launch_name} ELSE {other} END",
        "returnValue": "0", "callchainId": "NULL"})
    insert_generated(con, "CUPTI_ACTIVITY_KIND_MEMCPY", n, {
        "start": "i * 2000 + 1000", "end": "i * 2000 + 1000 + 200 + (i % 7) * 3000",
        "deviceId": "0", "streamId": "CASE WHEN i % 3 = 0 THEN 13 ELSE 7 END", "correlationId": "i + 1",
        "globalPid": str(pid),
        "bytes": f"CASE WHEN {big} THEN 3145728 ELSE (i % 7 + 1) * 4096 END",
        "copyKind": "CASE WHEN i % 30 = 0 THEN 2 ELSE 1 END",
        "srcKind": f"CASE WHEN i % 30 = 0 THEN 2 WHEN {pageable} THEN 0 ELSE 1 END",
        "dstKind": "CASE WHEN i % 30 = 0 THEN 0 ELSE 2 END"}, where_i="i % 10 = 0")
    insert_generated(con, "CUPTI_ACTIVITY_KIND_KERNEL", n, {
        "start": "i * 2000 + 1500", "end": "i * 2000 + 1500 + 1800", "deviceId": "0",
        "streamId": "CASE WHEN i % 3 = 0 THEN 13 ELSE 7 END", "correlationId": "i + 1", "globalPid": str(pid)},
        where_i="i % 20 BETWEEN 1 AND 5")
    every = PER_SCALE["nvtx_every"]
    con.execute("CREATE TEMP TABLE tmpl_nvtx AS SELECT * FROM NVTX_EVENTS WHERE eventType = 59 LIMIT 1")
    con.execute("DELETE FROM NVTX_EVENTS WHERE eventType = 59")
    ncols = columns(con, "NVTX_EVENTS")
    for name, span, stride in (("step", 100_000, 100_000), ("copy", 10, every)):
        over = {"start": f"i * {stride} * 2000 - 1", "end": f"(i * {stride} + {span}) * 2000",
                "text": f"'{name} ' || i" if name == "step" else "'mrope_copy'", "textId": "NULL",
                "globalTid": str(tid0), "eventType": "59", "binaryData": "NULL"}
        exprs = [over.get(c, f"t.{c}") for c in ncols]
        con.execute(f"""WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < {n // stride - 1})
            INSERT INTO NVTX_EVENTS ({', '.join(ncols)}) SELECT {', '.join(exprs)} FROM c, tmpl_nvtx t""")
    con.commit()
    counts = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in
              ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_KERNEL", "NVTX_EVENTS")}
    con.execute("VACUUM")
    con.close()
    os.replace(tmp, args.out)
    size = os.path.getsize(args.out)
    print(f"{args.out}: {size / 1e9:.2f} GB, {counts}, {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
