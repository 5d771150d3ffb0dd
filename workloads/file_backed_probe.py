#!/usr/bin/env python3
"""A host-to-device copy from a memory-mapped file, behind a GPU queue, against pageable and pinned sources
(issue 58: file-backed sources).

For each size it writes a file of random int64 (in --dir), then for each repeat queues --backlog-ms of
`torch.cuda._sleep` and times `src.to("cuda", non_blocking=True)` with the host clock, for sources:
  pinned        a pinned copy of the data
  pageable      an ordinary CPU tensor
  mmap_warm     torch.from_file(path, shared=False) (a private file mapping), the file's pages in the page cache
  mmap_cold     the same after posix_fadvise(DONTNEED) dropped the file's pages (each page read from disk)
  torch_load    torch.load(path.pt, mmap=True)'s tensor (pages cached)
It also runs nsysh2d's runtime checker (when importable) on one copy of each and records the class it gives,
and checks every copy's bytes on the GPU. Prints a table of median host milliseconds; --json writes every run.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

SOURCES = ["pinned", "pageable", "mmap_warm", "mmap_cold", "torch_load"]


def drop_pages(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes-mib", default="8,64,256")
    ap.add_argument("--backlog-ms", type=float, default=20.0)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--json")
    args = ap.parse_args()
    import torch
    from gpu_clock import sleep_cycles_per_us

    if not torch.cuda.is_available():
        print("needs a CUDA GPU", file=sys.stderr)
        return 2
    try:
        from nsysh2d.checker.runtime import Checker
    except ImportError:
        Checker = None
    cycles = int(args.backlog_ms * 1000 * sleep_cycles_per_us(torch))
    folder = tempfile.mkdtemp(dir=args.dir)
    runs, classes = [], {}
    sizes = [int(s) for s in args.sizes_mib.split(",")]
    for mib in sizes:
        n = mib * 1024 * 1024 // 8
        data = torch.randint(0, 1 << 40, (n,), dtype=torch.int64)
        raw, pt = os.path.join(folder, f"{mib}.bin"), os.path.join(folder, f"{mib}.pt")
        data.numpy().tofile(raw)
        torch.save({"w": data}, pt)
        for rep in range(args.repeats):
            for s in SOURCES:
                if s == "pinned":
                    src = data.pin_memory()
                elif s == "pageable":
                    src = data.clone()
                elif s == "torch_load":
                    src = torch.load(pt, mmap=True)["w"]
                else:
                    if s == "mmap_cold":
                        drop_pages(raw)
                    src = torch.from_file(raw, shared=False, size=n, dtype=torch.int64)
                torch.cuda.synchronize()
                torch.cuda._sleep(cycles)
                t0 = time.perf_counter_ns()
                dst = src.to("cuda", non_blocking=True)
                t1 = time.perf_counter_ns()
                torch.cuda.synchronize()
                runs.append({"source": s, "mib": mib, "rep": rep, "host_ms": (t1 - t0) / 1e6,
                             "correct": bool(torch.equal(dst.cpu(), data))})
                if Checker is not None and rep == 0:   # the class the runtime checker gives it (not timed)
                    with Checker() as chk:
                        src.to("cuda", non_blocking=True)
                    classes[f"{s}/{mib}"] = chk.copies[0].source_class if chk.copies else None
                del src, dst
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name()}, backlog {args.backlog_ms} ms, "
          f"median host ms of .to('cuda', non_blocking=True) (the checker's class: one untimed copy)")
    print("source".ljust(12) + "".join(f"{str(m) + ' MiB':>12}" for m in sizes) + "   correct  checker class")
    for s in SOURCES:
        cells = []
        for mib in sizes:
            xs = [r["host_ms"] for r in runs if r["source"] == s and r["mib"] == mib]
            cells.append(f"{statistics.median(xs):12.2f}")
        ok = all(r["correct"] for r in runs if r["source"] == s)
        print(s.ljust(12) + "".join(cells) + f"   {ok!s:7}  {classes.get(f'{s}/{sizes[0]}')}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "backlog_ms": args.backlog_ms,
                       "classes": classes, "runs": runs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
