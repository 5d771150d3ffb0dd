-- work: everything that occupied a stream inside the spans the backlogs need (work_spans,
-- probe_windows.sql): kernels, memsets and CUDA graph replays (CUPTI_ACTIVITY_KIND_GRAPH_TRACE: with
-- nsys's default --cuda-graph-trace=graph a replay is one row there and none in the kernel table),
-- and copies (memcpy_raw, store.sql). A row counts when it ended after a span's start and started before its end: work that
-- ended before the call or started after its copy cannot be queued ahead of it (streams run in
-- order). busy: a kernel, memset or graph replay (what keeps the GPU busy in the sense of gpu_idle_ns,
-- busy.sql); a copy engine's transfer is not. correlation_id, global_pid: which call launched it (the
-- queue count of backlog.sql); name_id: a kernel's name (top.sql tells NCCL collectives by it). No parameters.
-- gpu_work: the kernel, memset and graph rows inside work_spans, read with that condition inside SQLite
-- (pipeline.read_gpu_work); the condition is applied again here, on the normalized columns.
CREATE OR REPLACE TEMP TABLE work AS
WITH w AS (
    SELECT device_id, stream_id, start, "end", true AS busy, correlation_id, global_pid, name_id FROM gpu_work
    UNION ALL
    SELECT device_id, stream_id, start, "end", false, correlation_id, global_pid, NULL FROM memcpy_raw
)
SELECT w.* FROM w SEMI JOIN work_spans s ON w."end" >= s.lo AND w.start < s.hi;
