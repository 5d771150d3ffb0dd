#!/usr/bin/env python3
"""Many reports, three engines, one run: nsysh2d's local process pool (`-j`), a Dask LocalCluster
(`--scheduler local`, worker processes) and nsys's own runner (`nsys recipe nsysh2d_h2d --mode concurrent`
and `--mode dask-futures`). Copies of one real export stand in for the rank traces (each is read in full: no
cache). Prints a table and each engine's time as a ratio to the local pool measured in the same run.

usage: benchmarks/scaling.py [--counts 64,512] [--workers 2] [--base tests/data/h200/train-loop-before.sqlite]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def nsysh2d() -> list[str]:
    exe = Path(sys.executable).parent / "nsysh2d"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "nsysh2d.cli"]


def timed(cmd, env=None, cwd=None) -> tuple[float, str]:
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, cwd=cwd)
    if r.returncode != 0:
        raise SystemExit(f"failed ({r.returncode}): {' '.join(cmd[:4])} ...\n{r.stderr[-2000:]}")
    return time.perf_counter() - t, r.stdout


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--counts", default="64,512")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--base", default=str(ROOT / "tests/data/h200/train-loop-before.sqlite"))
    ap.add_argument("--nsys", default=os.environ.get("NSYS") or shutil.which("nsys"))
    args = ap.parse_args(argv)
    recipe_path = subprocess.run(nsysh2d() + ["recipe-path"], capture_output=True, text=True).stdout.strip()
    if args.nsys:   # Debian's nsys lacks a folder its recipe runner needs: run it through the stand-in then
        args.nsys = subprocess.run(nsysh2d() + ["recipe-path", "--nsys-shadow", "--nsys", args.nsys],
                                   capture_output=True, text=True, check=True).stdout.strip()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in map(int, args.counts.split(",")):
            folder = Path(tmp) / f"n{n}"
            folder.mkdir()
            paths = []
            for i in range(n):
                p = folder / f"rank{i:04d}.sqlite"
                shutil.copyfile(args.base, p)
                paths.append(str(p))
            ref = None
            engines = [("nsysh2d -j", nsysh2d() + ["analyze", *paths, "--format", "json", "--no-cache", "-j",
                                                     str(args.workers)], {}),
                       ("nsysh2d --scheduler local", nsysh2d() + ["analyze", *paths, "--format", "json", "--no-cache",
                                                                  "-j", str(args.workers), "--scheduler", "local"], {})]
            if args.nsys:
                for mode, env in (("concurrent", {"NSYS_CONCURRENT_MAX_WORKERS": str(args.workers)}),
                                  ("dask-futures", {"NSYS_DASK_N_WORKERS": str(args.workers),
                                                    "NSYS_DASK_THREADS_PER_WORKER": "1"})):
                    out = Path(tmp) / f"recipe-{n}-{mode}"
                    engines.append((f"nsys recipe --mode {mode}",
                                    [args.nsys, "recipe", "nsysh2d_h2d", "--input", str(folder), "--mode", mode,
                                     "--output", str(out), "--no-cache"],
                                    {"NSYS_RECIPE_PATH": recipe_path, "PATH": f"{Path(sys.executable).parent}:"
                                                                                 f"{os.environ['PATH']}",
                                     **env, "_out": str(out)}))
            for name, cmd, env in engines:
                out = env.pop("_out", None)
                wall, stdout = timed(cmd, env, cwd=tmp)
                doc = json.loads(Path(out, "reports.json").read_text() if out else stdout)
                same = None
                if ref is None:
                    ref = doc
                else:
                    same = doc == ref
                base = next((r["wall_s"] for r in rows if r["reports"] == n), wall)
                rows.append({"reports": n, "engine": name, "wall_s": wall, "same": same, "ratio": wall / base})
            shutil.rmtree(folder)
    print(f"{'reports':>7}  {'engine':<30} {'wall s':>8} {'vs -j':>7}  same JSON as -j")
    for r in rows:
        same = "-" if r["same"] is None else ("yes" if r["same"] else "NO")
        print(f"{r['reports']:>7}  {r['engine']:<30} {r['wall_s']:>8.2f} {r['ratio']:>6.2f}x  {same}")
    print(json.dumps(rows))
    return 0 if all(r["same"] in (None, True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
