-- by_api: figures per copy API, synchronous and asynchronous alike (whatever --calls selects), so that
-- copies the other figures leave out are still shown. Parameters: $min_ns, $direction.
-- api: the API name without nsys's _vNNNN suffix; sync: a synchronous copy API.
-- Ranked like summary.sql: by GPU idle (0.1 ms steps), then host time in long calls.
WITH a AS (
    SELECT api, sync, count(*) AS calls,
           count(*) FILTER (WHERE is_long(host_ns, $min_ns)) AS long_calls,
           count(*) FILTER (WHERE is_blocking(host_ns, $min_ns, waited_for_gpu)) AS blocking_calls,
           COALESCE(sum(host_ns) FILTER (WHERE is_long(host_ns, $min_ns)), 0)::BIGINT AS long_ns,
           COALESCE(sum(host_ns) FILTER (WHERE is_blocking(host_ns, $min_ns, waited_for_gpu)), 0)::BIGINT AS blocking_ns,
           CASE WHEN count(*) FILTER (WHERE is_long(host_ns, $min_ns) AND gpu_idle_ns IS NULL AND device_id IS NOT NULL) = 0
                THEN COALESCE(sum(gpu_idle_ns) FILTER (WHERE is_long(host_ns, $min_ns)), 0) END::BIGINT AS gpu_idle_ns,
           sum(host_ns)::BIGINT AS total_ns,
           quantile_disc(host_ns, 0.5) AS p50_ns,
           max(host_ns) AS max_ns,
           sum(bytes)::BIGINT AS bytes
    FROM calls_l
    WHERE selected(direction, sync, $direction, 'all')
    GROUP BY api, sync
)
SELECT * FROM a
ORDER BY gpu_idle_ns // 100000 DESC, long_ns DESC, calls DESC, api;
