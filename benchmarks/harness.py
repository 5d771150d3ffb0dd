#!/usr/bin/env python3
"""Time nsysh2d against the peer nsys commands on the same files, in one run.

Every command runs as a whole process, several times (median wall time, and the peak RSS of the
process, from wait4); the page cache is warmed first with the raw read floor (`cat FILE`).
Rows: the read floor, `nsysh2d analyze` cold (a fresh cache folder: first time the file is seen)
and warm (again, served from the cache; as the terminal table and as JSON), `nsys analyze -r cuda_memcpy_async`, `nsysh2d api-summary` and
`nsys stats -r cuda_api_sum` (once per file: it is slow). Ratios are against `nsys analyze`; the api-summary
line says how it compares with nsys stats, the report of the same figures.

A start-up line comes first (`--help`, the CLI's imports), a linearity line last (cold seconds per million
runtime rows of each file).

usage: harness.py [--scales 0.25,0.5,1] [--reps 3] [--work DIR] [--nsys PATH] [--no-stats | --stats-max-gb N]
                  [FILE.sqlite ...]
Files given are timed as they are; otherwise benchmarks/make_large.py makes one per scale in --work.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def run(cmd: list[str], env=None) -> tuple[float, int, int, float]:
    """(wall seconds, peak RSS in MB, exit code, CPU seconds: user + system) of one whole process. Through
    /usr/bin/time when there is one: wait4's RSS for a child forked from this Python includes the harness's
    own pages (its CPU figure includes the waited-for command's)."""
    with open(os.devnull, "wb") as null, tempfile.NamedTemporaryFile("r") as out:
        full = [TIME, "-f", "%M", "-o", out.name, *cmd] if TIME else cmd
        t0 = time.perf_counter()
        p = subprocess.Popen(full, stdout=null, stderr=null, env=env)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        text = out.read().strip().splitlines()
        kb = int(text[-1]) if TIME and text and text[-1].isdigit() else usage.ru_maxrss
    return wall, kb // 1024, os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime


def measure(cmd, reps, env=None, setup=None):
    walls, rss = [], []
    for _ in range(reps):
        if setup:
            setup()
        wall, mb, rc, _cpu = run(cmd, env)
        if rc != 0:
            return None, None, rc
        walls.append(wall)
        rss.append(mb)
    return statistics.median(walls), max(rss), 0


def default_nsys() -> str:
    return os.environ.get("NSYS") or shutil.which("nsys") or "/opt/nsys/target-linux-x64/nsys"


def find_nsysh2d() -> list[str]:
    exe = shutil.which("nsysh2d")
    return [exe] if exe else [sys.executable, "-m", "nsysh2d.cli"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*")
    ap.add_argument("--scales", default="0.25,0.5,1")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "nsysh2d-bench"))
    ap.add_argument("--nsys", default=default_nsys())
    ap.add_argument("--no-stats", action="store_true", help="skip nsys stats (42 s per run at 1.3 GB)")
    ap.add_argument("--stats-max-gb", type=float, help="run nsys stats only on files up to this size")
    args = ap.parse_args(argv)

    files = list(args.files)
    if not files:
        os.makedirs(args.work, exist_ok=True)
        for s in args.scales.split(","):
            path = os.path.join(args.work, f"scale-{s}.sqlite")
            if not os.path.exists(path):
                subprocess.run([sys.executable, os.path.join(HERE, "make_large.py"), "--scale", s, path], check=True)
            files.append(path)
    have_nsys = os.path.isfile(args.nsys) and os.access(args.nsys, os.X_OK)
    tool = find_nsysh2d()
    nsys_version = subprocess.run([args.nsys, "--version"], capture_output=True, text=True).stdout.strip() if have_nsys else "absent"
    import duckdb

    print(f"# {time.strftime('%Y-%m-%d')} {platform.machine()} {os.cpu_count()} cores, {platform.python_version()}, "
          f"duckdb {duckdb.__version__}, nsys: {nsys_version}; median of {args.reps} runs, page cache warm")
    startup(tool, args.reps)
    print(f"{'file':<22}{'size':>9}  {'command':<38}{'wall s':>9}{'peak MB':>9}{'vs nsys analyze':>17}")
    colds = []
    for path in files:
        size = os.path.getsize(path) / 1e9
        cache = tempfile.mkdtemp(prefix="nsysh2d-bench-cache-")
        env = {**os.environ, "NSYSH2D_CACHE_DIR": cache}
        rows = []
        rows.append(("read floor: cat", *measure(["cat", path], args.reps)))
        peer = None
        if have_nsys:
            peer = measure([args.nsys, "analyze", "-r", "cuda_memcpy_async", "--force-export=false", path], args.reps)
            if peer[2] != 0:
                peer = measure([args.nsys, "analyze", "-r", "cuda_memcpy_async", path], args.reps)
            rows.append(("nsys analyze -r cuda_memcpy_async", *peer))
        cold = measure(tool + ["analyze", path], args.reps, env=env,
                       setup=lambda: shutil.rmtree(cache, ignore_errors=True))
        rows.append(("nsysh2d analyze (cold)", *cold))
        colds.append((path, runtime_rows(path), cold[0], peer[0] if peer else None))
        rows.append(("nsysh2d analyze (warm, cached)", *measure(tool + ["analyze", path], args.reps, env=env)))
        # The same cached report (the cache key has no output format) as JSON, what a script or CI reads.
        rows.append(("nsysh2d analyze (warm, --format json)",
                     *measure(tool + ["analyze", path, "--format", "json"], args.reps, env=env)))
        summary = measure(tool + ["api-summary", path, "--format", "csv", "-o", os.path.join(cache, "a.csv")],
                          args.reps, env=env)
        rows.append(("nsysh2d api-summary", *summary))
        if have_nsys and not args.no_stats and (args.stats_max_gb is None or size <= args.stats_max_gb):
            stats = measure([args.nsys, "stats", "-r", "cuda_api_sum", "-f", "csv", "-o", os.path.join(cache, "s"),
                             path], 1)
            rows.append(("nsys stats -r cuda_api_sum (1 run)", *stats))
            if stats[0] and summary[0]:
                print(f"api-summary vs nsys stats -r cuda_api_sum on {os.path.basename(path)}: "
                      f"{stats[0] / summary[0]:.1f}x faster")
        shutil.rmtree(cache, ignore_errors=True)
        for name, wall, mb, rc in rows:
            ratio = ""
            if name.startswith("nsys analyze"):
                ratio = "(peer)"
            elif peer and peer[0] and wall:
                ratio = f"{peer[0] / wall:.2f}x faster" if wall < peer[0] else f"{wall / peer[0]:.2f}x slower"
            w = f"{wall:9.2f}" if wall is not None else f"{'exit ' + str(rc):>9}"
            m = f"{mb:9d}" if mb is not None else f"{'-':>9}"
            print(f"{os.path.basename(path):<22}{size:8.2f}G  {name:<38}{w}{m}{ratio:>17}")
    linearity(colds)
    return 0


def startup(tool: list[str], reps: int) -> None:
    """What a user waits for before any work: `--help`, and the imports of the CLI module (the analysis
    libraries load only when a report is analysed; `profile` must not import them at all)."""
    py = [sys.executable, "-c"]
    bare = measure(py + ["pass"], reps)
    cli = measure(py + ["import nsysh2d.cli"], reps)
    heavy = subprocess.run(py + ["import sys, nsysh2d.cli, nsysh2d.cli.check; "
                                "print(','.join(m for m in ('duckdb', 'polars', 'pyarrow') if m in sys.modules) or 'none')"],
                           capture_output=True, text=True).stdout.strip()
    print(f"start-up: python {bare[0]:.3f} s; `import nsysh2d.cli` {cli[0]:.3f} s ({cli[1]} MB; analysis libraries "
          f"imported: {heavy}); `nsysh2d --help` {measure(tool + ['--help'], reps)[0]:.3f} s; "
          f"`nsysh2d profile --help` {measure(tool + ['profile', '--help'], reps)[0]:.3f} s")


def runtime_rows(path: str) -> int | None:
    import sqlite3
    from contextlib import closing

    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as con:
            return con.execute("SELECT max(rowid) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0]
    except sqlite3.Error:
        return None


def linearity(colds) -> None:
    """Cold seconds per million runtime rows, per file: flat when the cold path is linear in the rows."""
    got = [(p, n, c, peer) for p, n, c, peer in colds if n and c]
    if len(got) < 2:
        return
    print("linearity (cold analyze): " + "; ".join(
        f"{os.path.basename(p)} {n / 1e6:.1f} M rows {c:.2f} s = {c / (n / 1e6):.3f} s per M rows"
        + (f" (nsys analyze {peer / (n / 1e6):.3f})" if peer else "") for p, n, c, peer in got))


if __name__ == "__main__":
    sys.exit(main())
