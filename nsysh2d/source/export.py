"""Turn a .nsys-rep into a SQLite export with the nsys CLI, cached in the user's cache folder
(never beside the report, whose folder may be read-only)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile

from ..cache import cache_dir, cache_root, check_private, file_key, seal, sealed
from ..errors import EXIT_EXPORT_FAILED, EXIT_NSYS_MISSING, BadInput, NsysH2DError
from ..capture.nsys import export_command, find_nsys
from . import schema


def sqlite_for_report(path: str, nsys: str | None = None, keep: bool = True) -> str:
    """The SQLite export of a .nsys-rep: the cache's (made once, sealed), or with keep=False (--no-cache) a
    new one in a private folder of its own, which the caller removes (its folder) when done."""
    if not os.path.isfile(path):
        raise BadInput(f"{path}: no such file")
    if not keep:
        return _export(path, nsys, tempfile.mkdtemp(prefix="nsysh2d-export-"), None)
    check_private(cache_root())   # an export another user could plant would be read as this report
    out_dir = cache_root() / "exports"
    target = out_dir / f"{file_key(path)}.sqlite"
    if target.exists() and sealed(target):   # one this cache wrote; another is exported again
        return str(target)
    cache_dir("exports")
    tmpdir = tempfile.mkdtemp(prefix="export-", dir=out_dir)
    try:
        return _export(path, nsys, tmpdir, target)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def tables_option() -> str:
    """--tables for nsys export: only the tables schema.VIEWS reads (anchored, case-insensitive POSIX regexes).
    Issue 38 measured one table exporting in 0.21 s where all took 3.9 s; the analyses read nothing else."""
    names = []
    for tables, _option, _cols in schema.VIEWS.values():
        names.extend([tables] if isinstance(tables, str) else tables)
    return "--tables=" + ",".join(f"^{n}$" for n in names)


def _export(path: str, nsys: str | None, tmpdir: str, target) -> str:
    """nsys export into tmpdir; moved to target (atomic: concurrent exports of one report end with one
    complete file) and sealed there, or left in tmpdir when target is None (tmpdir removed on failure)."""
    tmp = os.path.join(tmpdir, "report.sqlite")
    try:
        try:
            exe = find_nsys(nsys)
        except NsysH2DError as e:
            raise NsysH2DError(f"{path}: reading a .nsys-rep needs the nsys CLI to export it ({e}); or export it "
                               "yourself with 'nsys export --type sqlite' and pass the .sqlite",
                               EXIT_NSYS_MISSING) from None
        proc = subprocess.run(export_command(exe, path, tmp, [tables_option()]), capture_output=True, text=True)
        if proc.returncode != 0 and "tables" in (proc.stderr + proc.stdout).lower():
            # an nsys CLI without --tables (older than the 2023.4 seen here): the whole export, as before
            proc = subprocess.run(export_command(exe, path, tmp), capture_output=True, text=True)
        if proc.returncode != 0 or not os.path.exists(tmp):
            raise NsysH2DError(f"{path}: {_export_failure(exe, proc, report_build(path))}", EXIT_EXPORT_FAILED)
    except BaseException:
        if target is None:
            shutil.rmtree(tmpdir, ignore_errors=True)
        raise
    if target is None:
        return tmp
    os.replace(tmp, target)
    seal(target)
    return str(target)


def _export_failure(exe: str, proc, build: str | None = None) -> str:
    """What went wrong, in one line: nsys's own last line, and for a report written by a newer Nsight
    Systems, which binary refused it and what to do."""
    text = proc.stderr + proc.stdout
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    why = lines[-1] if lines else f"exit {proc.returncode}"
    if re.search(r"newer|more recent|unsupported (report|file) version|version .* not supported", text, re.I):
        by = f" ({build})" if build else ""
        return (f"the report was written by a newer Nsight Systems{by} than {exe} ({nsys_version(exe)}) can read; "
                f"export it with the nsys that captured it ('nsys export --type sqlite REPORT') and pass the .sqlite, "
                f"or point --nsys/$NSYS at a newer nsys (nsys said: {why})")
    return f"nsys export failed: {why}"


REPORT_MAGIC = b"NVIDIA Tegra Profiler Report "


def report_build(path: str) -> str | None:
    """The Nsight Systems build that captured a .nsys-rep/.qdrep, from the file's first line
    ("NVIDIA Tegra Profiler Report 2023@4@4@54-234433681190v0."), e.g. "2023.4.4.54"; None when the file does not
    start that way. An export made from the report names only the exporting nsys."""
    try:
        with open(path, "rb") as f:
            head = f.read(160)
    except OSError:
        return None
    if not head.startswith(REPORT_MAGIC):
        return None
    m = re.match(rb"(\d{4})@(\d{1,3})@(\d{1,3})(?:@(\d{1,6}))?", head[len(REPORT_MAGIC):])
    return ".".join(g.decode() for g in m.groups() if g is not None) if m else None


def nsys_version(exe: str) -> str:
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "version unknown"
    m = re.search(r"(\d{4}\.\d+(\.\d+)*)", out)
    return f"version {m.group(1)}" if m else "version unknown"
