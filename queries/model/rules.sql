-- rules: what long, waited and blocking mean, defined once for every query (macros). No parameters.
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
