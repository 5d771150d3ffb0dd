-- by_process: the figures of each process (a rank of a multi-process run) on its own: copy calls, long and
-- blocking calls and their host time, GPU idle during its long calls (each on its own device, model/backlog.sql),
-- its own step ranges (names matching $pattern on its threads) and, per step of its own, the host time of its
-- blocking calls made during its steps (with_step's rule, as summary.sql's *_in_steps). NULL gpu_idle_ns: not
-- computed for every long call. Parameters: $min_ns, $direction, $calls, $pattern.
WITH long_calls AS (
    SELECT global_pid, correlation_id, api_start, api_end FROM calls_l
    WHERE selected(direction, sync, $direction, $calls) AND is_long(host_ns, $min_ns)
),
in_step AS MATERIALIZED (
    SELECT global_pid, correlation_id FROM with_step('long_calls', $pattern) WHERE step IS NOT NULL
),
c AS (
    SELECT x.pid, x.host_ns, x.waited_for_gpu, x.gpu_idle_ns, x.device_id, i.correlation_id IS NOT NULL AS in_step
    FROM copies_g x
    LEFT JOIN in_step i ON i.global_pid = x.global_pid AND i.correlation_id = x.correlation_id
    WHERE selected(x.direction, x.sync, $direction, $calls)
),
steps AS (
    SELECT pid_of(global_pid) AS pid, count(*) AS steps FROM step_ranges($pattern) GROUP BY ALL
),
per AS (
    SELECT pid, count(*) AS calls,
           count(*) FILTER (WHERE is_long(host_ns, $min_ns)) AS long_calls,
           count(*) FILTER (WHERE is_blocking(host_ns, $min_ns, waited_for_gpu)) AS blocking_calls,
           COALESCE(sum(host_ns) FILTER (WHERE is_long(host_ns, $min_ns)), 0)::BIGINT AS long_ns,
           COALESCE(sum(host_ns) FILTER (WHERE is_blocking(host_ns, $min_ns, waited_for_gpu)), 0)::BIGINT AS blocking_ns,
           CASE WHEN count(*) FILTER (WHERE is_long(host_ns, $min_ns) AND gpu_idle_ns IS NULL AND device_id IS NOT NULL) = 0
                THEN COALESCE(sum(gpu_idle_ns) FILTER (WHERE is_long(host_ns, $min_ns)), 0) END::BIGINT AS gpu_idle_ns,
           COALESCE(sum(host_ns) FILTER (WHERE in_step AND is_blocking(host_ns, $min_ns, waited_for_gpu)), 0)::BIGINT
               AS blocking_ns_in_steps,
           list(DISTINCT device_id ORDER BY device_id) FILTER (WHERE device_id IS NOT NULL) AS devices
    FROM c GROUP BY pid
)
SELECT p.*, COALESCE(s.steps, 0) AS steps,
       CASE WHEN s.steps > 0 THEN p.blocking_ns_in_steps / s.steps END AS blocking_ns_per_step
FROM per p LEFT JOIN steps s USING (pid)
ORDER BY p.pid;
