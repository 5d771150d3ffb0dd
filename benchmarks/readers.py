"""The two readers of a large export's tables (source/ingest.py), in one run: the compiled one
(source/_sqlite_ints.c) against ADBC's SQLite driver, its peer. Both run the same statements inside SQLite on
the same parallel rowid parts; what differs is who turns the rows into columns. Interleaved runs, medians,
page cache warm; a table and the ratio compiled/ADBC.

    python benchmarks/readers.py /tmp/large-025.sqlite --reps 7

Rows: each read alone (the copy calls of the runtime table, the whole memcpy table, the kernels of a span), and a
cold `analyze --no-cache --format json` in a fresh process (reports compared: they must be equal).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def read_alone(trace_path: str, what: str) -> float:
    from nsysh2d.source import ingest
    from nsysh2d.source.trace import Trace

    with Trace.open(trace_path, use_cache=False) as t:
        if what == "copy calls":
            parts = t.copy_calls()
        elif what == "memcpy":
            parts = ingest.Parts(t, ingest.Read("memcpy", None, None, {"device_id": "INTEGER", "stream_id": "INTEGER"}))
        else:
            lo, hi = t.con.execute('SELECT min(start), max("end") FROM n.kernel').fetchone()
            where = ingest.spans_condition([(lo + (hi - lo) // 3, lo + (hi - lo) // 2)])
            parts = ingest.Parts(t, ingest.Read("kernel", where, None, {"device_id": "INTEGER", "stream_id": "INTEGER"}))
        start = time.perf_counter()
        with parts:
            rows = sum(p.num_rows for p in parts)
        took = time.perf_counter() - start
    assert rows > 0, what
    return took


def analyze(trace_path: str) -> tuple[float, dict]:
    start = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "nsysh2d.cli", "analyze", trace_path, "--no-cache", "--format", "json"],
                       capture_output=True, text=True)
    took = time.perf_counter() - start
    if p.returncode != 0:
        sys.exit(p.stderr.strip())
    rep = json.loads(p.stdout)["reports"][0]
    return took, {k: rep[k] for k in ("totals", "by_kind", "top", "steps") if k in rep}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    from nsysh2d.source.ingest import SMALL_ROWS, compiled_reader

    if compiled_reader() is None:
        sys.exit("the compiled reader is not built here (pip install . builds it; see setup.py)")
    times: dict[tuple[str, str], list[float]] = {}
    reports = {}
    rows = ["copy calls", "memcpy", "kernels of a span", "analyze (cold, process)"]
    for _ in range(args.reps):
        for reader in ("adbc", "compiled"):
            os.environ["NSYSH2D_READER"] = reader
            for what in rows[:3]:
                times.setdefault((what, reader), []).append(read_alone(args.trace, what))
            took, reports[reader] = analyze(args.trace)
            times.setdefault((rows[3], reader), []).append(took)
    print(f"# {args.trace}; {args.reps} interleaved runs each, medians in seconds; tables of more than {SMALL_ROWS} rows")
    print(f"{'what':<26}{'ADBC':>9}{'compiled':>10}{'compiled/ADBC':>15}")
    for what in rows:
        a, c = (statistics.median(times[(what, r)]) for r in ("adbc", "compiled"))
        print(f"{what:<26}{a:>9.3f}{c:>10.3f}{c / a:>15.2f}")
    same = reports["adbc"] == reports["compiled"]
    print(f"reports equal: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
