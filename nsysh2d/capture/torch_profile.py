"""Run a Python script under torch.profiler and write a Kineto trace that nsysh2d can read.

For users without nsys: `nsysh2d profile --kineto script.py` (or `python -m nsysh2d.capture.torch_profile -o OUT
script.py ARGS`). This module is on the profiling path: it imports torch only (no duckdb, polars or rich).

What the capture holds: CPU ops, the CUDA runtime and driver calls, GPU kernels, copies and memsets, and the
Python frames of each call (with_stack=True: the call site, as nsys's Python backtraces give it). torch.profiler
does not record NVTX ranges, so `torch.cuda.nvtx.range_push/range_pop` (and `torch.cuda.nvtx.range`) are also
opened as `record_function` ranges while the script runs: the steps and ranges a workload marks for nsys are
in the Kineto trace too (as user annotations), with the same names.
"""
from __future__ import annotations

import argparse
import gzip
import os
import runpy
import shutil
import subprocess
import sys
import tempfile
import threading
import traceback

from ..errors import EXIT_OUTPUT_UNWRITABLE, EXIT_WORKLOAD_FAILED, NsysH2DError
from .site_hook import install


def _mirror_nvtx(torch) -> None:
    """NVTX pushes/pops also open/close record_function ranges (one stack per thread)."""
    nvtx = torch.cuda.nvtx
    push, pop = nvtx.range_push, nvtx.range_pop
    local = threading.local()

    def range_push(msg):
        rf = torch.autograd.profiler.record_function(str(msg))
        rf.__enter__()
        local.__dict__.setdefault("stack", []).append(rf)
        try:
            return push(msg)
        except RuntimeError:   # a CPU-only build has no NVTX: the record_function range is what counts here
            return 0

    def range_pop():
        stack = local.__dict__.get("stack")
        if stack:
            stack.pop().__exit__(None, None, None)
        try:
            return pop()
        except RuntimeError:
            return 0

    nvtx.range_push, nvtx.range_pop = range_push, range_pop


def capture(script: str, args: list[str], output: str, with_stack: bool = True, sites: bool = False) -> int:
    """Run `script ARGS` as __main__ under torch.profiler; write the trace to `output` (gzip when it ends in
    .gz). Returns the script's exit status (the trace is written whatever it is)."""
    import torch   # lazy: torch only in the process that runs the workload
    from torch.profiler import ProfilerActivity, profile   # lazy: torch only in the process that runs the workload

    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    _mirror_nvtx(torch)
    if sites:   # each host-to-device copy inside a range naming its call line and class (capture/site_hook.py)
        install()
    status = 0
    argv = sys.argv
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        with profile(activities=activities, with_stack=with_stack, record_shapes=False) as prof:
            try:
                runpy.run_path(script, run_name="__main__")
            except SystemExit as e:
                status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except Exception:   # the workload failed: say how, and keep the trace of what it did
                traceback.print_exc()
                status = 1
            if torch.cuda.is_available():
                torch.cuda.synchronize()
    finally:
        sys.argv = argv
    _write(prof, output)
    return status


def _write(prof, output: str) -> None:
    folder = os.path.dirname(os.path.abspath(output))
    fd, tmp = tempfile.mkstemp(suffix=".json", dir=folder)
    os.close(fd)
    try:
        prof.export_chrome_trace(tmp)
        if output.endswith(".gz"):
            with open(tmp, "rb") as src, gzip.open(tmp + ".gz", "wb", compresslevel=6) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            os.replace(tmp + ".gz", output)
            os.unlink(tmp)
        else:
            os.replace(tmp, output)
    except BaseException:
        for path in (tmp, tmp + ".gz"):
            if os.path.exists(path):
                os.unlink(path)
        raise


def capture_runs(runs: list[tuple[str, list[str]]], out, dry_run: bool, echo, sites: bool = True) -> int:
    """`nsysh2d profile --kineto`: each (label, [python, script, args...]) run under this module, in its own
    process, writing OUT/label.pt.trace.json.gz."""

    cmds = [(lab, [cmd[0], "-m", "nsysh2d.capture.torch_profile", *([] if sites else ["--no-sites"]), "-o",
                   str(out / f"{lab}.pt.trace.json.gz"), *cmd[1:]]) for lab, cmd in runs]
    if dry_run:
        for _lab, cmd in cmds:
            echo(" ".join(cmd))
        return 0
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise NsysH2DError(f"{out}: cannot create output folder ({e.strerror})", EXIT_OUTPUT_UNWRITABLE) from None
    written = []
    for i, (lab, cmd) in enumerate(cmds, 1):
        echo(f"[{i}/{len(cmds)}] capturing {lab} under torch.profiler", err=True)
        code = subprocess.run(cmd).returncode
        path = cmd[cmd.index("-o") + 1]
        if not os.path.isfile(path):
            raise NsysH2DError(f"{lab}: the workload under torch.profiler exited {code} and wrote no trace",
                               EXIT_WORKLOAD_FAILED)
        if code:
            raise NsysH2DError(f"{lab}: the workload exited {code} under torch.profiler; partial trace kept at {path}",
                               EXIT_WORKLOAD_FAILED)
        written.append(path)
        echo(f"wrote {path}")
    echo(f"next: nsysh2d {'compare' if len(written) == 2 else 'analyze'} {' '.join(written)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nsysh2d.capture.torch_profile", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", required=True, help="trace to write (.json or .json.gz)")
    ap.add_argument("--no-stack", action="store_true", help="no Python frames (smaller; no call sites)")
    ap.add_argument("--no-sites", action="store_true",
                    help="no copy hook (capture/site_hook.py): host-to-device copies get no range naming their call line")
    ap.add_argument("script")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    ns = ap.parse_args(argv)
    args = ns.args[1:] if ns.args[:1] == ["--"] else ns.args
    # Before the workload runs, not after: a trace with nowhere to go would lose the whole run.
    folder = os.path.dirname(os.path.abspath(ns.output))
    try:
        os.makedirs(folder, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as e:
        print(f"nsysh2d: error: {folder!r}: cannot write the trace there ({e.strerror})", file=sys.stderr)
        return EXIT_OUTPUT_UNWRITABLE
    status = capture(ns.script, args, ns.output, with_stack=not ns.no_stack, sites=not ns.no_sites)
    if not os.environ.get("NSYSH2D_QUIET"):
        print(f"nsysh2d: wrote {ns.output}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
