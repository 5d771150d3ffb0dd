-- by_step: figures per step range and source kind, for a gate that judges the steady state. Parameters:
-- $min_ns, $direction, $calls, $pattern (the step-range regular expression).
-- step: ordinal of the step range (by start time, from 0) during which the call ran, in the call's
-- process (any thread: a copy made by a helper thread during a step belongs to that step); NULL: outside
-- every step (model init, warm-up before the first step, shutdown). gpu_idle_ns: GPU idle during long calls.
WITH steps AS (
    SELECT global_pid_of(global_tid) AS global_pid, start, "end",
           (row_number() OVER (ORDER BY start, "end") - 1)::INTEGER AS step
    FROM nvtx_ranges WHERE regexp_matches(name, $pattern)
),
c AS (
    SELECT x.global_pid, x.correlation_id, any_value(x.src_kind_name) AS src_kind, any_value(x.host_ns) AS host_ns,
           any_value(x.gpu_idle_ns) AS gpu_idle_ns, any_value(x.device_id) AS device_id,
           bool_or(x.waited_for_gpu) AS waited, min(s.step) AS step
    FROM copies_x x
    LEFT JOIN steps s ON s.global_pid = x.global_pid AND x.api_start >= s.start AND x.api_end <= s."end"
    WHERE selected(x.direction, x.sync, $direction, $calls)
    GROUP BY x.global_pid, x.correlation_id
)
SELECT step, src_kind, count(*) AS calls,
       count(*) FILTER (WHERE is_long(host_ns, $min_ns)) AS long_calls,
       count(*) FILTER (WHERE is_blocking(host_ns, $min_ns, waited)) AS blocking_calls,
       COALESCE(sum(host_ns) FILTER (WHERE is_long(host_ns, $min_ns)), 0)::BIGINT AS long_ns,
       COALESCE(sum(host_ns) FILTER (WHERE is_blocking(host_ns, $min_ns, waited)), 0)::BIGINT AS blocking_ns,
       CASE WHEN count(*) FILTER (WHERE is_long(host_ns, $min_ns) AND gpu_idle_ns IS NULL AND device_id IS NOT NULL) = 0
                THEN COALESCE(sum(gpu_idle_ns) FILTER (WHERE is_long(host_ns, $min_ns)), 0) END::BIGINT AS gpu_idle_ns
FROM c
GROUP BY step, src_kind
ORDER BY step NULLS FIRST, src_kind;
