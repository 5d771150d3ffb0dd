-- by_step: figures per step range and source kind, for a gate that judges the steady state. Parameters:
-- $min_ns, $direction, $calls, $pattern (the step-range regular expression).
-- step: ordinal of the step range (by start time, from 0) during which the call ran, in the call's
-- process (any thread: a copy made by a helper thread during a step belongs to that step); NULL: outside
-- every step (model init, warm-up before the first step, shutdown). before_steps: outside every step and started
-- before the first range matching the pattern in its process began (model init: what the gate's scope.py leaves
-- out when it asks whether the steps hold the run). gpu_idle_ns: GPU idle during long calls.
WITH first AS (
    SELECT global_pid_of(global_tid) AS global_pid, min(start) AS first_start FROM nvtx_ranges
    WHERE regexp_matches(name, $pattern) GROUP BY ALL
),
c AS (
    -- One row per call (calls has one per process and correlation id), with its step (with_step, nvtx.sql).
    SELECT src_kind_name AS src_kind, host_ns, gpu_idle_ns, device_id, waited_for_gpu AS waited, s.step,
           s.step IS NULL AND s.api_start < COALESCE(f.first_start, -9223372036854775807) AS before_steps
    FROM with_step('calls_l', $pattern) s
    LEFT JOIN first f ON f.global_pid = s.global_pid
    WHERE selected(direction, sync, $direction, $calls)
)
SELECT step, src_kind, before_steps, count(*) AS calls,
       count(*) FILTER (WHERE is_long(host_ns, $min_ns)) AS long_calls,
       count(*) FILTER (WHERE is_blocking(host_ns, $min_ns, waited)) AS blocking_calls,
       COALESCE(sum(host_ns) FILTER (WHERE is_long(host_ns, $min_ns)), 0)::BIGINT AS long_ns,
       COALESCE(sum(host_ns) FILTER (WHERE is_blocking(host_ns, $min_ns, waited)), 0)::BIGINT AS blocking_ns,
       CASE WHEN count(*) FILTER (WHERE is_long(host_ns, $min_ns) AND gpu_idle_ns IS NULL AND device_id IS NOT NULL) = 0
                THEN COALESCE(sum(gpu_idle_ns) FILTER (WHERE is_long(host_ns, $min_ns)), 0) END::BIGINT AS gpu_idle_ns
FROM c
GROUP BY step, src_kind, before_steps
ORDER BY step NULLS FIRST, src_kind, before_steps;
