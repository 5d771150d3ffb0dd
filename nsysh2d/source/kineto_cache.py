"""The normalized tables of a Kineto trace, kept in the cache (issue 56): parsing the JSON is most of a run
(1.9 s of each on a 3.6 MB .json.gz, ~45 MB/s of text), and the report cache is keyed by the options, so every
new command or option parsed the trace again. The k_* tables kineto.load makes are written once as Parquet files
in a folder of the cache's own, keyed as exports are (the trace's path, size, mtime, inode, ctime, and the
reader's code), each file sealed (cache.seal: an HMAC of its identity under the cache's key); a folder with a file
not sealed, or changed since, is read again from the trace, never served. --no-cache neither reads nor writes it."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from .. import __version__
from ..cache import cache_dir, cache_root, check_private, file_key, seal, sealed
from . import kineto

MANIFEST = "manifest.json"


def _code_digest() -> str:
    """What the tables depend on besides the trace: the reader's own code and the nsysh2d version."""
    h = hashlib.sha256(__version__.encode())
    here = Path(__file__).parent
    for name in ("kineto.py", "kineto_json.py", "kineto_legacy.py"):
        h.update((here / name).read_bytes())
    return h.hexdigest()[:16]


def folder(path: str) -> Path:
    return cache_root() / "kineto" / file_key(path, _code_digest())


def load(con, path: str, warnings: list[str], use_cache: bool, inconsistencies: list[str] | None = None) -> dict:
    """kineto.load, from the cache when this trace's tables are there (sealed), else from the JSON (and then kept,
    with its warnings and inconsistencies: what the gate must fail on is served from the cache too)."""
    inconsistencies = [] if inconsistencies is None else inconsistencies
    if not use_cache:
        return kineto.load(con, path, warnings, inconsistencies)
    check_private(cache_root())   # tables another user could plant would be read as this trace
    target = folder(path)
    got = _restore(con, target)
    if got is not None:
        meta, kept, bad = got
        kineto.finish(con)   # the views; its warnings are among those kept
        warnings.extend(kept)
        inconsistencies.extend(bad)
        return meta
    before, bad_before = len(warnings), len(inconsistencies)
    meta = kineto.load(con, path, warnings, inconsistencies)
    try:
        _store(con, target, meta, warnings[before:], inconsistencies[bad_before:])
    except OSError:   # a full or read-only cache costs the next run its parse, nothing else
        pass
    return meta


def _restore(con, target: Path):
    manifest = target / MANIFEST
    if not manifest.is_file() or not sealed(manifest):
        return None
    try:
        doc = json.loads(manifest.read_text())
        files = {t: target / f"{t}.parquet" for t in doc["tables"]}
        if set(files) != set(kineto.TABLES) or not all(f.is_file() and sealed(f) for f in files.values()):
            return None
        for t, f in files.items():
            con.read_parquet(str(f)).create(t)   # DuckDB's relation API: no SQL text
        return dict(doc["meta"]), [str(w) for w in doc["warnings"]], [str(w) for w in doc["inconsistencies"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _store(con, target: Path, meta: dict, kept: list[str], bad: list[str]) -> None:
    import pyarrow.parquet as pq   # lazy: only a first read stores tables; a restore is DuckDB's

    parent = cache_dir("kineto")
    tmp = Path(tempfile.mkdtemp(prefix="tables-", dir=parent))
    try:
        for t in kineto.TABLES:
            f = tmp / f"{t}.parquet"
            pq.write_table(con.table(t).to_arrow_table(), f)
            seal(f)
        (tmp / MANIFEST).write_text(json.dumps({"tables": list(kineto.TABLES), "meta": meta, "warnings": kept,
                                                  "inconsistencies": bad}))
        seal(tmp / MANIFEST)
        if target.exists():   # a planted or stale folder is replaced; a complete one another run wrote is kept
            if (target / MANIFEST).is_file() and sealed(target / MANIFEST):
                return
            shutil.rmtree(target, ignore_errors=True)
        os.rename(tmp, target)   # atomic: readers see no folder or a whole one
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
