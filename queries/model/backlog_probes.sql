-- backlog_probes: the calls whose stream backlog and GPU idle time a report needs and that `backlog`
-- does not hold yet (temp table `probes`). Parameters: $min_ns, $direction (the top list's limit is not one: every long
-- call is probed, since the GPU idle figures of groups and totals sum over all long calls).
-- The backlog decides whether a long call that returned before its GPU copy started waited for the
-- GPU (copies_x.sql); top.sql shows it. $min_ns = 0 asks for every call.
CREATE OR REPLACE TEMP TABLE probes AS
SELECT global_pid, correlation_id, api_start, api_end, gpu_start, device_id, stream_id
FROM copies_x
WHERE is_long(host_ns, $min_ns) AND ($direction = 'all' OR direction = $direction) AND backlog_ns IS NULL;
