-- top: the $limit longest calls (host-side duration) with host_ns >= $min_ns, with everything that
-- explains them. Parameters: $min_ns, $direction, $calls, $limit, $pattern (the step-range expression).
-- step: the ordinal of the step range the call ran in (by_step.sql's rule, model/nvtx.sql with_step: the
-- first step range of its process that contains the call whole; NULL: none), so the gate lists the calls it
-- counts. Matched here, by DuckDB's RE2 (linear time): Python's re never runs a pattern from the command line
-- or the checkout on a trace's names (a backtracking pattern against a crafted range name hung the gate).
-- gpu_idle_ns: how long the call's device ran no kernel, memset or graph replay during the call.
-- queued_ahead, cause: see model/backlog.sql and rules.sql (queue_full, call_cause).
-- device_backlog_ns: until all work the device had started before this copy's GPU start ended
-- (computed for the listed calls only; the pipeline has built table `work` and their stream backlog
-- first, see model/backlog_probes.sql).
-- collective_ns_ahead: how long NCCL collectives (kernels named nccl*) ran on the call's stream between the call's
-- start and its GPU copy's start: a copy queued behind a collective waits for the other ranks too.
WITH collectives AS (SELECT id FROM n.strings WHERE lower(value) LIKE 'nccl%'),
steps AS MATERIALIZED (
    SELECT global_pid_of(global_tid) AS global_pid, start, "end",
           (row_number() OVER (ORDER BY start, "end") - 1)::INTEGER AS step
    FROM nvtx_ranges WHERE regexp_matches(name, $pattern)
),
t AS (
    SELECT api_start AS api_start_ns, host_ns, gpu_ns, bytes::BIGINT AS bytes,
           src_kind_name AS src_kind, dst_kind_name AS dst_kind, source_class, waited_for_gpu,
           site, site_line, nvtx_range, nvtx_path, api_name, api, sync, pid, tid, device_id AS device, stream_id AS stream,
           backlog_ns, gpu_idle_ns, wait_ns, host_ns - greatest(least(wait_ns, host_ns), 0) AS rest_ns,
           queued_ahead,
           -- why it was long (rules.sql)
           call_cause(api_end, gpu_start, gpu_end, host_ns, backlog_ns, queued_ahead, sync,
                      'Pageable' IN (src_kind_name, dst_kind_name)) AS cause,
           evidence, fix, gpu_start, global_pid, api_end
    FROM copies_x
    WHERE selected(direction, sync, $direction, $calls) AND is_long(host_ns, $min_ns)
    ORDER BY host_ns DESC, api_start
    LIMIT $limit
)
SELECT t.* EXCLUDE (gpu_start, global_pid, api_end),
       greatest(COALESCE((SELECT max(w."end") FROM work w WHERE w.device_id = t.device AND w.start < t.gpu_start),
                         t.api_start_ns) - t.api_start_ns, 0) AS device_backlog_ns,
       (SELECT COALESCE(sum(least(w."end", t.gpu_start) - greatest(w.start, t.api_start_ns)), 0)
        FROM work w WHERE w.device_id = t.device AND w.stream_id = t.stream AND w.busy AND w."end" > t.api_start_ns
                      AND w.start < t.gpu_start AND w.name_id IN (SELECT id FROM collectives))::BIGINT
           AS collective_ns_ahead,
       (SELECT min(s.step) FROM steps s
        WHERE s.global_pid = t.global_pid AND s.start <= t.api_start_ns AND s."end" >= t.api_end) AS step
FROM t
ORDER BY t.host_ns DESC, t.api_start_ns;
