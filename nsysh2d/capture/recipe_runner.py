"""nsys's recipe runner on an install that lacks the folder it insists on (Debian's nsys package): find the gap,
and build a private stand-in install that has it, for users who cannot write to the install."""
from __future__ import annotations

import hashlib
import os
import shutil
from importlib import resources
from pathlib import Path

from ..errors import NsysH2DError
from .nsys import find_nsys


def recipe_runner_gap(nsys_path: str) -> Path | None:
    """The folder whose absence stops nsys's recipe runner, if this install lacks it. `nsys recipe` puts
    `python/packages/nsys_recipe/third_party` on sys.path and refuses to start when it is missing ("Cannot find
    ... Please set NSYS_DIR"); Debian's nsys package leaves it out. Our recipe needs nothing from it."""
    pkg = Path(os.path.realpath(nsys_path)).parent / "python" / "packages" / "nsys_recipe"
    if pkg.is_dir() and not (pkg / "third_party").exists():
        return pkg / "third_party"
    return None


def shadow_install(nsys_path: str, dest: Path) -> str:
    """A private stand-in for an nsys install that lacks the recipe runner's folder, for a user who cannot
    write to the install: its folders re-made under `dest`, its files linked, the nsys binary copied (nsys
    finds its own files from where its binary really is, so a link would lead back), and the empty folder
    added. Built once per install (keyed by path and binary mtime); returns the stand-in's nsys."""
    real = Path(os.path.realpath(nsys_path))
    target = real.parent                 # e.g. .../target-linux-x64
    root = target.parent                 # the install: target-*, host-*, ...
    st = real.stat()
    key = hashlib.sha256(f"{real}|{st.st_mtime_ns}|{st.st_size}".encode()).hexdigest()[:16]
    out = dest / key
    nsys_copy = out / target.name / real.name
    if nsys_copy.is_file():
        return str(nsys_copy)
    tmp = dest / f".{key}.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    for folder, dirs, files in os.walk(root):
        rel = Path(folder).relative_to(root)
        (tmp / rel).mkdir(parents=True, exist_ok=True)
        for d in dirs:   # linked folders (not followed) stay links
            if os.path.islink(os.path.join(folder, d)):
                os.symlink(os.readlink(os.path.join(folder, d)), tmp / rel / d)
        for f in files:
            src = Path(folder) / f
            if src == real:
                shutil.copy2(src, tmp / rel / f)
            else:
                os.symlink(src, tmp / rel / f)
    gap = tmp / target.name / "python" / "packages" / "nsys_recipe" / "third_party"
    gap.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(tmp, out)
    except OSError:   # another process built it first
        shutil.rmtree(tmp, ignore_errors=True)
    return str(nsys_copy)


def recipe_folder(nsys_path: str | None, shadow_in=None) -> tuple[str, str | None, Path | None]:
    """What `nsysh2d recipe-path` prints: the recipe folder, or, given `shadow_in` (a callable giving the folder for
    a stand-in install), the nsys to run the recipe with; and the nsys found with the runner's folder its install
    lacks (None when nothing is missing)."""

    try:
        nsys = find_nsys(nsys_path)
    except NsysH2DError:
        if shadow_in or nsys_path:
            raise
        nsys = None
    gap = recipe_runner_gap(nsys) if nsys else None
    if shadow_in:
        return (nsys if gap is None else shadow_install(nsys, shadow_in())), None, None
    return str(resources.files("nsysh2d") / "recipe"), nsys, gap
