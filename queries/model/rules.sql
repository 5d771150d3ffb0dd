-- rules: what long, waited, blocking and a long call's cause mean, defined once for every query (macros). No parameters.
-- long: the host-side duration of the call (what the CPU thread lost) is at least min_ns.
CREATE MACRO is_long(host_ns, min_ns) AS host_ns >= min_ns;
-- waited behind the backlog: the call lasted at least half of the GPU work queued ahead of it on its
-- stream (a pageable copy behind others in flight waits for their staging buffers and returns just
-- before its own DMA starts). The sweep's threshold uses this rule alone (analyses/sweep.sql).
CREATE MACRO waited_behind_backlog(host_ns, backlog_ns) AS host_ns >= 0.5 * backlog_ns;
-- waited for the GPU: returned only after its own GPU copy had started, or waited behind the backlog.
-- A long call that did not wait for the GPU is host overhead.
CREATE MACRO waited_for_gpu(api_end, gpu_start, host_ns, backlog_ns) AS
    api_end >= gpu_start OR (backlog_ns > 0 AND waited_behind_backlog(host_ns, backlog_ns));
-- blocking (long-blocking): long and waited for the GPU.
CREATE MACRO is_blocking(host_ns, min_ns, waited) AS is_long(host_ns, min_ns) AND waited;
-- selected: a call of the direction ('h2d', 'd2h', 'all') and copy APIs ('async', 'sync', 'all') asked for.
CREATE MACRO selected(direction, sync, want_direction, want_calls) AS
    (want_direction = 'all' OR direction = want_direction) AND (want_calls = 'all' OR sync = (want_calls = 'sync'));
-- a full queue: at least this many kernels, memsets and copies launched earlier on the call's stream had not
-- started when the call began. A stream holds 1021 behind the running item (workloads/launch_queue.py, H100:
-- the 1022nd launch waits for the first to end); the traces of the Qwen3-VL step that stalls show 1012-1021
-- (items the trace does not record, such as event records, take slots too). A call into a full queue waits
-- for a slot, not for its own transfer: pinning does not help (docs/why-non-blocking-blocks.md).
CREATE MACRO queue_full(queued_ahead) AS queued_ahead >= 1000;
-- why a long copy call was long, one cause each (analyses/by_cause.sql, top.sql); NULL: its backlog was not
-- computed (model/backlog_probes.sql). In this order:
--   backlog       it waited for the GPU and at least half of it was the work queued ahead on its stream (a
--                 pageable or staged copy, or a sync API, behind a backlog)
--   launch_queue  its stream's queue was full: it waited for a slot
--   own_transfer  its own transfer: a sync API, a copy through pageable memory (the driver stages it on the
--                 host), or a call that returned only after its GPU copy had ended; nothing much queued ahead
--   unknown       none of these (e.g. host-side work inside a pinned copy call on an idle stream)
-- The host-allocation cause belongs to calls that pin memory, not to copies (by_cause.sql).
CREATE MACRO call_cause(api_end, gpu_start, gpu_end, host_ns, backlog_ns, queued_ahead, sync, pageable) AS
    CASE WHEN backlog_ns IS NULL THEN NULL
         WHEN waited_for_gpu(api_end, gpu_start, host_ns, backlog_ns) AND backlog_ns >= 0.5 * host_ns THEN 'backlog'
         WHEN queue_full(queued_ahead) THEN 'launch_queue'
         WHEN sync OR pageable OR api_end >= gpu_end THEN 'own_transfer'
         ELSE 'unknown' END;
