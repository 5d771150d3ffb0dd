"""The `long calls by cause` section of a report: every long call where copies are made, one cause each
(queries/model/rules.sql's call_cause, queries/analyses/by_cause.sql), with its evidence and what to do."""
from __future__ import annotations

from ..units import format_ns
from .render import Column, Section
from .safe import Line, Trusted

LAUNCH_QUEUE_FIX = ("pinning does not help; launch less per step (CUDA graphs, fused kernels) or let the host run "
                    "less far ahead")
# What each cause needs (docs/why-non-blocking-blocks.md). Our own text: Trusted.
WHAT_TO_DO = {
    "backlog": "pin the source (or copy the contiguous pieces of a strided pinned view); the fix lines above "
               "name the call sites",
    "own_transfer": "the call lasted as long as its own transfer: pinning the source makes it asynchronous; "
                    "otherwise move less, or earlier",
    "launch_queue": LAUNCH_QUEUE_FIX,
    "host_allocation": "`.pin_memory()` grew the caching host allocator (cudaHostAlloc) while earlier copies were "
                       "in flight: copy into a pinned staging buffer allocated once and reused (an event per "
                       "slot before rewriting it)",
    "new_host_allocation": "pinned host memory allocated on the copy path with no copy in flight: the caching "
                           "host allocator had no free block of that size (first use, or a size not seen before) "
                           "and pays cudaHostAlloc again for each new size: allocate the pinned buffer once, of "
                           "the largest size, and reuse it",
    "unknown": "host-side work inside the call that the trace does not explain",
    "not_computed": "the backlog of these calls was not computed (more long calls than NSYSH2D_GPU_IDLE_MAX)",
}


COLLECTIVE = ("the copy was queued behind a collective, which ends only when every rank has reached it: issue the "
              "copy before the collective, or on another stream")


def cause_section(rep: dict) -> Section | None:
    rows = rep.get("by_cause") or []
    if not rows:
        return None
    behind = [t for t in rep.get("top") or [] if t.get("collective_ns_ahead")]
    extra = [Line("behind a collective: {} of the longest calls waited while NCCL kernels ran on their stream ({} of "
                  "their wait): {}", Trusted(str(len(behind))),
                  Trusted(format_ns(sum(t["collective_ns_ahead"] for t in behind))), Trusted(COLLECTIVE))] if behind else []
    return Section(
        "long calls by cause",
        [Column("cause", "cause"), Column("calls", "calls", "int"), Column("host_ns", "host time", "ns"),
         Column("max_ns", "max", "ns"), Column("backlog_p50_ns", "backlog p50", "ns", drop=2),
         Column("wait_p50_ns", "wait p50", "ns", drop=3), Column("queued_ahead_max", "queued", "int", drop=1),
         Column("longest_api", "longest: API", drop=4), Column("longest_nvtx_range", "NVTX range"),
         Column("where", "call site", drop=5)],
        [{**r, "where": r.get("longest_site")} for r in rows],
        note="every long copy call, and every long call that pinned host memory inside a range with copies: "
             "backlog = waited mostly for the GPU work queued ahead on its stream; own_transfer = waited for its "
             "own transfer (nothing much queued); launch_queue = its stream's queue was full; host_allocation = "
             "cudaHostAlloc/cudaHostRegister while copies were in flight; new_host_allocation = the same on the copy "
             "path with none in flight; queued: launches ahead not yet started (a stream holds 1021).",
        lines=[Line("{}: {}", Trusted(r["cause"]), Trusted(WHAT_TO_DO[r["cause"]]))
               for r in rows if r["cause"] in WHAT_TO_DO] + extra)
