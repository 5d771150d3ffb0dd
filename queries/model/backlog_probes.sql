-- backlog_probes: the calls whose stream backlog and GPU idle time a report needs and that `backlog`
-- does not hold yet (temp table `probes`). Parameters: $min_ns, $direction, $limit, $all_max.
-- Every long call of the direction when there are at most $all_max of them: the GPU idle figures of
-- groups and totals sum over all long calls. Beyond that (the busy time of every kernel near a long call
-- would cost more than the rest of the analysis), only the calls whose flag or row needs the backlog: a
-- long call that returned before its GPU copy started (the backlog decides whether it waited for the
-- GPU, see copies_x.sql) and the $limit longest (top.sql); the groups' GPU idle is then unknown (NULL).
-- n_long: how many long calls of the direction there are (the model warns beyond $all_max).
-- $min_ns = 0 and $limit = NULL ask for every call.
CREATE OR REPLACE TEMP TABLE probes AS
SELECT global_pid, correlation_id, api_start, api_end, gpu_start, device_id, stream_id, n_long
FROM (
    SELECT *, row_number() OVER (PARTITION BY sync ORDER BY host_ns DESC, api_start) AS rn, count(*) OVER () AS n_long
    FROM calls_l
    WHERE is_long(host_ns, $min_ns) AND ($direction = 'all' OR direction = $direction)
)
WHERE backlog_ns IS NULL
  AND (n_long <= $all_max OR $limit IS NULL OR api_end < gpu_start OR rn <= $limit);
