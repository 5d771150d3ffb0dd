"""Every analysis by name (the name a Job carries, `analyze_many(analysis=NAME)`): how the facade computes it from
an opened trace, and how its result round-trips JSON (the cache entry, what a Dask worker sends back).

A new analysis is three files: its query (queries/analyses/NAME.sql), its module here (analyses/NAME.py: its typed
result and a SPEC), and its line below. It then has a facade method (`nsysh2d.open(path).NAME(opts)`), the cache,
-j, --scheduler, folders and the error handling of every other analysis."""
from __future__ import annotations

from . import api_summary, h2d_blocking, range_times, threshold
from .spec import Spec

ANALYSES: dict[str, Spec] = {"report": h2d_blocking.SPEC, "api-summary": api_summary.SPEC,
                             "threshold": threshold.SPEC, "range-times": range_times.SPEC}


def spec(name: str) -> Spec:
    found = ANALYSES.get(name)
    if found is None:
        raise ValueError(f"no analysis {name!r}")
    return found
