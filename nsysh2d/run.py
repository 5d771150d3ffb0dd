"""Running analyses: many reports in parallel with progress, the cache of finished reports, atomic writes.

The cache is keyed by the export's real path, size, mtime, inode and ctime, the nsysh2d version, the
SQL shipped and the options, so a changed export or a new release is never served stale. Entries are
Report.to_json() documents, read back through Report.from_json (a damaged entry is recomputed).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from . import __version__
from .errors import EXIT_OUTPUT_UNWRITABLE, NsysH2DError


# ------------------------------------------------------------------------------------ files
def cache_root() -> Path:
    base = os.environ.get("NSYSH2D_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "nsysh2d")
    return Path(base)


MARKER = ".nsysh2d-cache"           # written into the cache folder: cache-clear removes only marked folders
CACHE_PARTS = ("reports", "exports", "spill", "copies")


def cache_dir(part: str) -> Path:
    """A folder of the cache (reports, exports, spill, copies), created with the marker that says nsysh2d owns it."""
    root = cache_root()
    (root / part).mkdir(parents=True, exist_ok=True)
    marker = root / MARKER
    if not marker.exists():
        marker.write_text("nsysh2d cache folder: 'nsysh2d cache-clear' deletes what it wrote here\n")
    return root / part


def file_key(path: str, salt: str = "") -> str:
    """A key that changes whenever the file does: real path, size, mtime, inode, ctime."""
    st = os.stat(path)
    raw = f"{os.path.realpath(path)}|{st.st_size}|{st.st_mtime_ns}|{st.st_ino}|{st.st_ctime_ns}|{salt}"
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def atomic_write(path: str | os.PathLike, data: bytes | str) -> None:
    """Write to a temporary file in the same folder, then rename: readers never see half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp makes the file 0600; the user's file gets the mode any new file of theirs gets (or keeps its own).
        try:
            mode = path.stat().st_mode & 0o7777
        except OSError:
            mode = 0o666 & ~_umask()
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def append_output(path: str, text: str) -> None:
    """Append all of `text` or nothing: a failed write (full disk) is cut back to the file's old end. Only
    to a regular file that this user owns (or a new one), never through a symbolic link: on a shared
    machine a link planted at the path would send the text into another file (docs/security.md)."""
    import stat

    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0), 0o666)   # a FIFO: an error, not a wait
    except OSError as e:
        if os.path.islink(path):
            raise NsysH2DError(f"{path}: is a symbolic link; refusing to append through it (name the file "
                               "itself)", EXIT_OUTPUT_UNWRITABLE) from None
        raise NsysH2DError(f"{path}: cannot write ({e.strerror})", EXIT_OUTPUT_UNWRITABLE) from None
    st = os.fstat(fd)
    euid = os.geteuid() if hasattr(os, "geteuid") else st.st_uid
    if not stat.S_ISREG(st.st_mode) or (st.st_uid != euid and euid != 0):
        os.close(fd)
        what = "not a regular file" if not stat.S_ISREG(st.st_mode) else "owned by another user"
        raise NsysH2DError(f"{path}: {what}; refusing to append to it", EXIT_OUTPUT_UNWRITABLE)
    try:
        with open(fd, "ab") as f:
            start = f.tell()
            try:
                f.write(text.encode())
                f.flush()
                os.fsync(f.fileno())
            except OSError:
                f.truncate(start)
                raise
    except OSError as e:
        raise NsysH2DError(f"{path}: cannot write ({e.strerror})", EXIT_OUTPUT_UNWRITABLE) from None


def write_output(path: str, text: str) -> None:
    try:
        atomic_write(path, text)
    except OSError as e:
        raise NsysH2DError(f"{path}: cannot write ({e.strerror})", EXIT_OUTPUT_UNWRITABLE) from None


# ------------------------------------------------------------------------------------ cache
def _sql_digest() -> str:
    from .source.sql import load, names

    h = hashlib.sha256()
    for n in names():
        h.update(n.encode())
        h.update(load(n).encode())
    return h.hexdigest()[:16]


def entry_path(path: str, opts, groups) -> str:
    salt = json.dumps([__version__, _sql_digest(), vars(opts), list(groups)], sort_keys=True, default=str)
    return str(cache_root() / "reports" / f"{file_key(path, salt)}.json")   # cache_dir() when written


def cached_report(path: str, opts, groups, use_cache=True, compute=None):
    """The Report of one export: from the cache when an entry of the same shape is there, else computed
    (and stored)."""
    from .analyses.h2d_blocking import Report

    if not use_cache or path.endswith((".nsys-rep", ".qdrep")) or not os.path.isfile(path):
        return compute()
    entry = entry_path(path, opts, groups)
    try:
        with open(entry, encoding="utf-8") as f:
            stored = json.load(f)
        # Served only if it is what was written: an entry edited, truncated or of another shape is recomputed.
        if _digest(stored["report"]) != stored["sha256"]:
            raise ValueError("cache entry altered")
        rep = Report.from_json(stored["report"])
        rep.path = path
        return rep
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    rep = compute()
    try:
        cache_dir("reports")
        payload = json.loads(json.dumps(rep.to_json(), default=str))
        atomic_write(entry, json.dumps({"sha256": _digest(payload), "report": payload}))
    except OSError:
        pass  # an unwritable cache folder only costs speed
    return rep


def _digest(payload) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def clear_cache() -> int:
    """Deletes what nsysh2d wrote (its folders, then the marker); a folder without the marker is not ours."""
    from .errors import BadInput

    root = cache_root()
    if not root.exists():
        return 0
    if not (root / MARKER).is_file():
        raise BadInput(f"{root}: not an nsysh2d cache folder (no {MARKER} marker); nothing deleted")
    n = 0
    for part in CACHE_PARTS:
        if (root / part).is_dir():
            n += sum(1 for f in (root / part).rglob("*") if f.is_file())
            shutil.rmtree(root / part, ignore_errors=True)
    (root / MARKER).unlink()
    try:
        root.rmdir()   # only when nothing else is left in it
    except OSError:
        pass
    return n


# ------------------------------------------------------------------------------------ batch
def _one(path: str, opts, groups, nsys, use_cache):
    # A cache hit never loads DuckDB or polars: the warm path stays near process start-up time.
    return cached_report(path, opts, groups, use_cache=use_cache, compute=lambda: _compute(path, opts, groups, nsys))


def _compute(path, opts, groups, nsys):
    from .analyses.h2d_blocking import analyze
    from .model import CopyModel

    from .source.files import damage_is_bad_input

    with damage_is_bad_input(path):
        model = CopyModel.open(path, nsys=nsys)
        try:
            return analyze(model, opts, groups)
        finally:
            model.close()





def _in_pool(paths, jobs, done, args) -> None:
    """One task per report on `jobs` spawned processes (not forked: a fork of a process with DuckDB's threads
    running can deadlock). The workers start with SIGINT ignored (inherited across exec): Ctrl-C reaches
    this process alone, which then stops them, instead of each printing a traceback."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from . import cpus

    # Each worker's analysis takes its share of the CPUs, not all of them (cpus.py).
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                               initializer=cpus.share, initargs=(jobs,))
    try:
        try:
            futs = {pool.submit(_one, p, *args): i for i, p in enumerate(paths)}   # starts the workers
        finally:
            signal.signal(signal.SIGINT, previous)
        for f in as_completed(futs):
            done(futs[f], f.result)
    except BaseException:
        for proc in list(getattr(pool, "_processes", {}).values()):   # no waiting for their current reports
            proc.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()


def analyze_many(paths: list[str], opts, groups=None, jobs: int | None = None, nsys: str | None = None,
                 use_cache: bool = True, progress: bool | None = None, scheduler: str | None = None):
    """Returns (Reports in input order, errors as (path, message, exit code)). scheduler: a Dask scheduler
    address or `local` (cluster.py) instead of the local process pool."""
    from .analyses.options import REPORT_GROUPS

    groups = REPORT_GROUPS if groups is None else groups
    results: dict[int, object] = {}
    errors: list[tuple[str, str, int]] = []
    if jobs is None:
        from .cpus import usable_cpus
        jobs = usable_cpus()
    jobs = max(1, min(jobs, len(paths)))
    if progress is None:
        progress = sys.stderr.isatty() and len(paths) > 1
    bar = task = None
    if progress:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(TextColumn("analyzing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                       transient=True, console=Console(stderr=True))
        bar.start()
        task = bar.add_task("reports", total=len(paths))

    def done(i, result):
        try:
            results[i] = result()
        except NsysH2DError as e:
            errors.append((paths[i], str(e), e.exit_code))
        if bar:
            bar.advance(task)

    try:
        if scheduler:
            from .cluster import on_cluster
            on_cluster(paths, scheduler, done, (opts, groups, nsys, use_cache), workers=jobs if jobs > 1 else None)
        elif jobs == 1:
            for i, p in enumerate(paths):
                done(i, lambda p=p: _one(p, opts, groups, nsys, use_cache))
        else:
            _in_pool(paths, jobs, done, (opts, groups, nsys, use_cache))
    finally:
        if bar:
            bar.stop()
    return [results[i] for i in sorted(results)], errors


def analyze_one(path: str, opts, nsys: str | None = None, use_cache: bool = True):
    """One Report; an error is raised as NsysH2DError."""
    return analyze_all([path], opts, nsys, use_cache)[0]


def analyze_all(paths: list[str], opts, nsys: str | None = None, use_cache: bool = True,
                scheduler: str | None = None) -> list:
    """Reports of all paths, in order; the first error is raised as NsysH2DError."""
    reps, errors = analyze_many(paths, opts, jobs=1 if not scheduler else None, nsys=nsys, use_cache=use_cache,
                                progress=False, scheduler=scheduler)
    if errors:
        _p, msg, code = errors[0]
        raise NsysH2DError(msg, code)
    return reps
