"""Find and drive the Nsight Systems CLI: profile, finish a left-over .qdstrm, export SQLite.

This module is on the profiling path: it must import neither duckdb, polars nor rich, so that a
bare GPU box with torch + click can capture traces.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from ..errors import (
    EXIT_BAD_INPUT,
    EXIT_EXPORT_FAILED,
    EXIT_NSYS_MISSING,
    EXIT_OUTPUT_UNWRITABLE,
    EXIT_WORKLOAD_FAILED,
    NsysH2DError,
)
from .torch_profile import capture_runs
from .workload import workload_variants

# Where Nsight Systems' CLI lands in the common install layouts (newest version wins).
NSYS_GLOBS = (
    "/opt/nvidia/nsight-systems/*/bin/nsys",
    "/opt/nvidia/nsight-systems/*/target-linux-x64/nsys",
    "/opt/nvidia/nsight-systems-cli/*/bin/nsys",
    "/opt/nvidia/nsight-systems-cli/*/target-linux-x64/nsys",
    "/usr/local/cuda*/bin/nsys",
    "/usr/local/cuda*/nsight-systems-*/bin/nsys",
    "/usr/local/cuda*/nsight-systems-*/target-linux-x64/nsys",
    "/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys",
    "/usr/lib/nsight-systems/bin/nsys",
    "/usr/lib/x86_64-linux-gnu/nsight-systems/target-linux-x64/nsys",
    "/opt/nsys/target-linux-x64/nsys",
)

INSTALL_ADVICE = (
    "install Nsight Systems (https://developer.nvidia.com/nsight-systems) or the CUDA toolkit, "
    "or point --nsys / $NSYS at an nsys binary"
)


def _version_key(path: str) -> tuple:
    # Sort /opt/.../2025.3.1/... after /opt/.../2024.6.2/...: compare every number in the path.
    return tuple(int(n) for n in re.findall(r"\d+", path))


def candidate_paths(env: dict | None = None) -> list[str]:
    """Every nsys binary we can see, in the order we would pick them."""
    env = os.environ if env is None else env
    found: list[str] = []
    if env.get("NSYS"):
        found.append(env["NSYS"])
    on_path = shutil.which("nsys", path=env.get("PATH"))
    if on_path:
        found.append(on_path)
    globbed: list[str] = []
    for pattern in NSYS_GLOBS:
        globbed.extend(glob.glob(pattern))
    found.extend(sorted(set(globbed), key=_version_key, reverse=True))
    return [p for i, p in enumerate(found) if p not in found[:i]]


def find_nsys(explicit: str | None = None, env: dict | None = None) -> str:
    """The nsys binary to use: --nsys, then $NSYS, then PATH, then the usual install folders."""
    if explicit:
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return explicit
        raise NsysH2DError(f"--nsys {explicit}: not an executable file", EXIT_NSYS_MISSING)
    env = os.environ if env is None else env
    if env.get("NSYS") and not (os.path.isfile(env["NSYS"]) and os.access(env["NSYS"], os.X_OK)):
        raise NsysH2DError(f"$NSYS={env['NSYS']}: not an executable file", EXIT_NSYS_MISSING)
    for path in candidate_paths(env):
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise NsysH2DError(f"no nsys CLI found; {INSTALL_ADVICE}", EXIT_NSYS_MISSING)


def find_importer(nsys_path: str) -> str | None:
    """A QdstrmImporter next to (or a few folders around) the nsys binary, if there is one."""
    base = Path(os.path.realpath(nsys_path)).parent
    patterns = [base / "QdstrmImporter", base.parent / "*" / "QdstrmImporter",
                base.parent.parent / "*" / "QdstrmImporter",
                base.parent.parent / "*" / "*" / "QdstrmImporter"]
    for pattern in patterns:
        for hit in sorted(glob.glob(str(pattern))):
            if os.access(hit, os.X_OK):
                return hit
    return None


@dataclass
class CaptureOptions:
    """What `nsys profile` records; by default CUDA + NVTX without CPU sampling, which backtraces need and which
    costs 10x the capture time and ~2 GB raw on qwen3vl (docs/benchmarks.md, "What a capture costs")."""
    trace: str = "cuda,nvtx"
    cudabacktrace: str | None = None
    sample: str = "none"
    python_backtrace: bool = False
    cpuctxsw: str = "none"
    extra: list[str] = field(default_factory=list)
    export_extra: list[str] = field(default_factory=list)

    def __post_init__(self):
        if self.cudabacktrace in ("none", ""):   # the CLI's spelling of "off"
            self.cudabacktrace = None

    def export_args(self) -> list[str]:
        # Python backtraces are NVTX extended payloads: nsys exports them only with --include-blobs.
        blobs = ["--include-blobs=true"] if self.python_backtrace else []
        return blobs + list(self.export_extra)

    def args(self) -> list[str]:
        sample = self.sample   # nsys records Python stacks only with CUDA backtraces, and those only while sampling
        cudabacktrace = self.cudabacktrace or ("memory" if self.python_backtrace else None)
        if cudabacktrace and sample == "none":
            sample = "process-tree"
        out = [f"--trace={self.trace}", f"--sample={sample}", f"--cpuctxsw={self.cpuctxsw}"]
        if cudabacktrace:
            out.append(f"--cudabacktrace={cudabacktrace}")
        if self.python_backtrace:
            out.append("--python-backtrace=cuda")
        return out + list(self.extra)


def profile_command(nsys: str, output_base: str, target: list[str], opts: CaptureOptions) -> list[str]:
    return [nsys, "profile", *opts.args(), "--force-overwrite=true", "-o", output_base, *target]


def export_command(nsys: str, report: str, sqlite_out: str, extra: list[str] | None = None) -> list[str]:
    return [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", *(extra or []), "-o", sqlite_out, report]


@dataclass
class CaptureResult:
    label: str
    report: str | None
    sqlite: str | None
    log: str


def _run(cmd: list[str], log_path: Path, env: dict | None = None, echo=print) -> int:
    echo("$ " + " ".join(cmd))
    with open(log_path, "ab") as log:
        log.write(("$ " + " ".join(cmd) + "\n").encode())
        log.flush()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            sys.stdout.write(line.decode(errors="replace"))
        return proc.wait()


def import_qdstrm(qdstrm: Path, importer: str, lib_path: str | None, log: Path, echo=print) -> Path | None:
    env = dict(os.environ)
    if lib_path:
        env["LD_LIBRARY_PATH"] = lib_path + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    rc = _run([importer, "-i", str(qdstrm)], log, env=env, echo=echo)
    rep = qdstrm.with_suffix(".nsys-rep")
    return rep if rc == 0 and rep.exists() else None


def capture(nsys: str, outdir: Path, label: str, target: list[str], opts: CaptureOptions,
            importer_lib: str | None = None, echo=print) -> CaptureResult:
    """Profile one command, finish the import if nsys left a .qdstrm, export SQLite.

    Raises NsysH2DError with a distinct exit code on each kind of failure, naming whatever
    partial capture exists so nothing is lost.
    """
    outdir.mkdir(parents=True, exist_ok=True)
    if not os.access(outdir, os.W_OK):
        raise NsysH2DError(f"{outdir}: output folder is not writable", EXIT_OUTPUT_UNWRITABLE)
    base = outdir / label
    log = outdir / f"{label}.log"
    log.write_bytes(b"")
    rc = _run(profile_command(nsys, str(base), target, opts), log, echo=echo)
    rep = base.with_suffix(".nsys-rep")
    qdstrm = base.with_suffix(".qdstrm")
    if not rep.exists() and qdstrm.exists():
        importer = find_importer(nsys)
        if importer is None:
            raise NsysH2DError(
                f"nsys left {qdstrm} unimported and no QdstrmImporter was found near {nsys}; "
                f"import it with QdstrmImporter -i {qdstrm}", EXIT_EXPORT_FAILED)
        echo(f"nsys left a .qdstrm; importing it with {importer}")
        if import_qdstrm(qdstrm, importer, importer_lib, log, echo=echo) is None:
            raise NsysH2DError(f"QdstrmImporter failed on {qdstrm} (log: {log}); the raw capture is kept",
                               EXIT_EXPORT_FAILED)
    if rc != 0:
        kept = f"; partial capture kept at {rep}" if rep.exists() else ""
        raise NsysH2DError(f"{label}: nsys profile exited {rc} (workload failed or nsys error; log: {log}){kept}",
                           EXIT_WORKLOAD_FAILED)
    if not rep.exists():
        raise NsysH2DError(f"{label}: nsys wrote no report at {rep} (log: {log})", EXIT_EXPORT_FAILED)
    sqlite_out = base.with_suffix(".sqlite")
    rc = _run(export_command(nsys, str(rep), str(sqlite_out), opts.export_args()), log, echo=echo)
    if rc != 0 or not sqlite_out.exists():
        raise NsysH2DError(f"{label}: nsys export failed (exit {rc}; log: {log}); report kept at {rep}",
                           EXIT_EXPORT_FAILED)
    return CaptureResult(label, str(rep), str(sqlite_out), str(log))


def cuda_calls(sqlite_path: str) -> int:
    """CUDA API rows in an export (stdlib sqlite3: profiling never needs DuckDB)."""   # SQL in Python: that count

    try:
        con = sqlite3.connect(f"file:{quote(os.path.abspath(sqlite_path))}?mode=ro", uri=True)
        try:
            return con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


@dataclass
class ProfileRequest:
    """What `nsysh2d profile` captures and where (what nsys records is CaptureOptions)."""
    target: list[str]
    output_dir: str = "nsysh2d-out"
    name: str | None = None
    variants: str | None = None          # comma-separated --variant values; None: the workload's own
    no_variants: bool = False
    nsys_path: str | None = None
    importer_lib: str | None = None
    python_exe: str = sys.executable
    dry_run: bool = False
    kineto: bool = False                 # torch.profiler instead of nsys
    sites: bool = True                   # a .py workload runs under capture/site_hook.py (sites without sampling)


def profile_targets(req: ProfileRequest, opts: CaptureOptions, echo) -> int:
    """`nsysh2d profile`: each variant of a workload (or the command) captured and exported. echo(text,
    err=False) prints."""
    parts = list(req.target)
    if parts and parts[0] == "--":
        parts = parts[1:]
    if not parts:
        raise NsysH2DError("nothing to profile: give WORKLOAD.py or -- COMMAND", EXIT_BAD_INPUT)
    is_script = parts[0].endswith(".py")
    if is_script:
        script, rest = parts[0], parts[1:]
        if rest and rest[0] == "--":
            rest = rest[1:]
        if not os.path.isfile(script):
            raise NsysH2DError(f"{script}: no such workload file", EXIT_BAD_INPUT)
        hook = ["-m", "nsysh2d.capture.site_hook"] if req.sites and not req.kineto else []
        base_cmd = [req.python_exe, *hook, os.path.abspath(script), *rest]
        label = req.name or Path(script).stem
        found = [] if req.no_variants else (req.variants.split(",") if req.variants else workload_variants(script))
    else:
        base_cmd, label = parts, req.name or Path(parts[0]).name
        found = [] if (req.no_variants or not req.variants) else req.variants.split(",")
    runs = [(f"{label}-{v}", [*base_cmd, "--variant", v]) for v in found] or [(label, base_cmd)]
    if req.kineto:
        if not is_script:
            raise NsysH2DError("--kineto runs a Python workload under torch.profiler: give WORKLOAD.py", EXIT_BAD_INPUT)
        return capture_runs(runs, Path(req.output_dir), req.dry_run, echo, sites=req.sites)
    if req.dry_run:
        exe = req.nsys_path or os.environ.get("NSYS") or "nsys"
        for lab, cmd in runs:
            echo(" ".join(profile_command(exe, str(Path(req.output_dir) / lab), cmd, opts)))
            echo(" ".join(export_command(exe, str(Path(req.output_dir) / f"{lab}.nsys-rep"),
                                                        str(Path(req.output_dir) / f"{lab}.sqlite"), opts.export_args())))
        return 0
    exe = find_nsys(req.nsys_path)
    echo(f"nsys: {exe}", err=True)
    out = Path(req.output_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise NsysH2DError(f"{out}: cannot create output folder ({e.strerror})", EXIT_OUTPUT_UNWRITABLE) from None
    written, empty = [], []
    for i, (lab, cmd) in enumerate(runs, 1):
        echo(f"[{i}/{len(runs)}] capturing {lab}", err=True)
        res = capture(exe, out, lab, cmd, opts, importer_lib=req.importer_lib,
                              echo=lambda s: echo(s, err=True))
        written.append(res.sqlite)
        echo(f"wrote {res.sqlite} (report {res.report}, log {res.log})")
        if not cuda_calls(res.sqlite):
            empty.append(res.sqlite)
    if empty:
        raise NsysH2DError(f"{', '.join(empty)}: the workload made no CUDA API call that nsys recorded, so there is "
                           f"nothing to analyze (does it see a GPU? is 'cuda' in --trace, now {opts.trace!r}?)",
                           EXIT_WORKLOAD_FAILED)
    if len(written) == 2:
        echo(f"next: nsysh2d compare {written[0]} {written[1]}")
    else:
        echo(f"next: nsysh2d analyze {' '.join(written)}")
    return 0
