"""One job: one analysis of one input, from the cache of finished results or computed. An analysis is an
entry of ANALYSES (how to compute it, and its JSON both ways: the cache entry and what a Dask worker sends
back). run.py maps jobs over many inputs (process pool), cluster.py over a Dask cluster, the nsys recipe over
its own executors; none of them imports the others. Every analysis so gets the cache, -j and --scheduler.

The cache is keyed by the export's real path, size, mtime, inode and ctime, the nsysh2d version, the
SQL shipped and the options, so a changed export or a new release is never served stale. Entries are
Report.to_json() documents, read back through Report.from_json (a damaged entry is recomputed); the
folder, its key and the writes are cache.py's.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
from dataclasses import dataclass
from typing import Callable

from .. import __version__
from ..cache import atomic_write, cache_dir, cache_root, check_private, entry_digest, file_key
from ..source.inputs import input_for


def _sql_digest() -> str:
    from ..source.sql import load, names

    h = hashlib.sha256()
    for n in names():
        h.update(n.encode())
        h.update(load(n).encode())
    return h.hexdigest()[:16]


def entry_path(path: str, opts, groups, analysis: str = "report") -> str:
    from ..rules.sites import source_root

    # A Kineto trace's sites are resolved against the source root (sites.resolve): part of its entry's key.
    root = source_root() if input_for(path).uses_source_root else None
    salt = json.dumps([__version__, _sql_digest(), analysis, vars(opts) if opts is not None else None,
                       list(groups or ())] + ([root] if root else []), sort_keys=True, default=str)
    return str(cache_root() / "reports" / f"{file_key(path, salt)}.json")   # cache_dir() when written


@dataclass(frozen=True)
class Analysis:
    compute: Callable      # (path, opts, groups, nsys, use_cache) -> result
    to_json: Callable      # result -> dict
    from_json: Callable    # dict -> result; raises KeyError/TypeError/ValueError/AttributeError on another shape


def _report_from_json(d: dict):
    from ..analyses.h2d_blocking import Report

    return Report.from_json(d)


def _compute(path, opts, groups, nsys, use_cache=True):
    from ..analyses.h2d_blocking import analyze
    from ..model import CopyModel
    from ..source.files import damage_is_bad_input

    with damage_is_bad_input(path):
        model = CopyModel.open(path, nsys=nsys, use_cache=use_cache)
        try:
            return analyze(model, opts, groups)
        finally:
            model.close()


def _api_summary(path, _opts, _groups, nsys, use_cache=True):
    from ..analyses.api_summary import api_summary

    return api_summary(path, nsys, use_cache=use_cache)


def _threshold(path, _opts, _groups, nsys, use_cache=True):
    from ..analyses.threshold import threshold_report

    return threshold_report(path, nsys, use_cache=use_cache)


def _threshold_from_json(d: dict):
    from ..analyses.threshold import ThresholdResult

    return ThresholdResult.from_json(d)


def _range_times(path, opts, _groups, nsys, use_cache=True):
    from ..analyses.range_times import range_times

    return range_times(path, nsys, use_cache, opts.step_pattern)


def _range_times_from_json(d: dict):
    from ..analyses.range_times import RangeTimes

    return RangeTimes.from_json(d)


def _summary_from_json(d: dict) -> dict:
    if not isinstance(d.get("path"), str) or not all(isinstance(r, dict) for r in d["rows"]):
        raise TypeError("not an api-summary")
    return d


ANALYSES = {
    "report": Analysis(_compute, lambda rep: rep.to_json(), _report_from_json),
    "api-summary": Analysis(_api_summary, lambda d: d, _summary_from_json),
    "threshold": Analysis(_threshold, lambda r: r.to_json(), _threshold_from_json),
    "range-times": Analysis(_range_times, lambda r: r.to_json(), _range_times_from_json),
}


def _set_path(result, path: str):
    if isinstance(result, dict):
        result["path"] = path
    else:
        result.path = path
    return result


def cached(path: str, analysis: str, opts, groups, use_cache, compute):
    """The result of one analysis of one export: from the cache when an entry of the same shape is there, else
    computed (and stored)."""
    kind = ANALYSES[analysis]
    if not use_cache or not input_for(path).cacheable or not os.path.isfile(path):
        return compute()
    check_private(cache_root())
    entry = entry_path(path, opts, groups, analysis)
    try:
        with open(entry, encoding="utf-8") as f:
            stored = json.load(f)
        # Served only if this cache wrote it: an entry edited, truncated, of another shape or made without the
        # cache's key is recomputed.
        if not hmac.compare_digest(str(stored["hmac"]), entry_digest(stored["report"])):
            raise ValueError("cache entry altered")
        return _set_path(kind.from_json(stored["report"]), path)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    result = compute()
    try:
        cache_dir("reports")
        payload = json.loads(json.dumps(kind.to_json(result), default=str))
        atomic_write(entry, json.dumps({"hmac": entry_digest(payload), "report": payload}))
    except OSError:
        pass  # an unwritable cache folder only costs speed
    return result


def report_job(path: str, opts, groups, nsys, use_cache, analysis: str = "report"):
    """One job (the name is older than ANALYSES: the Report is the default analysis). A cache hit never loads
    DuckDB or polars: the warm path stays near process start-up time."""
    return cached(path, analysis, opts, groups, use_cache,
                  compute=lambda: ANALYSES[analysis].compute(path, opts, groups, nsys, use_cache))
