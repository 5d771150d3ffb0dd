"""Turn a .nsys-rep into a SQLite export with the nsys CLI, cached in the user's cache folder
(never beside the report, whose folder may be read-only)."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from ..run import cache_dir, cache_root, file_key
from ..errors import EXIT_EXPORT_FAILED, EXIT_NSYS_MISSING, BadInput, NsysH2DError
from ..nsys import export_command, find_nsys


def sqlite_for_report(path: str, nsys: str | None = None) -> str:
    if not os.path.isfile(path):
        raise BadInput(f"{path}: no such file")
    out_dir = cache_root() / "exports"
    target = out_dir / f"{file_key(path)}.sqlite"
    if target.exists():
        return str(target)
    try:
        exe = find_nsys(nsys)
    except NsysH2DError as e:
        raise NsysH2DError(f"{path}: reading a .nsys-rep needs the nsys CLI to export it ({e}); or export it "
                           "yourself with 'nsys export --type sqlite' and pass the .sqlite", EXIT_NSYS_MISSING) from None
    cache_dir("exports")
    tmpdir = tempfile.mkdtemp(prefix="export-", dir=out_dir)
    try:
        tmp = os.path.join(tmpdir, "report.sqlite")
        proc = subprocess.run(export_command(exe, path, tmp), capture_output=True, text=True)
        if proc.returncode != 0 or not os.path.exists(tmp):
            lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
            why = lines[-1].strip() if lines else f"exit {proc.returncode}"
            raise NsysH2DError(f"{path}: nsys export failed: {why}", EXIT_EXPORT_FAILED)
        os.replace(tmp, target)  # atomic: concurrent exports of one report end with one complete file
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    return str(target)
