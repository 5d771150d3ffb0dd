-- backlog_probes: the calls whose stream backlog a report needs and that `backlog` does not hold
-- yet (temp table `probes`). Parameters: $min_ns, $direction, $limit.
-- A long call needs it when it returned before its GPU copy started (the backlog then decides
-- whether it waited for the GPU, see copies_x.sql) or when it is among the $limit longest (top.sql
-- shows the backlog: the $limit longest synchronous and asynchronous ones). Every other call's flag does
-- not depend on it. $min_ns = 0 and $limit = NULL ask for every call.
CREATE OR REPLACE TEMP TABLE probes AS
SELECT global_pid, correlation_id, api_start, gpu_start, device_id, stream_id
FROM (
    SELECT * FROM copies_x
    WHERE is_long(host_ns, $min_ns) AND ($direction = 'all' OR direction = $direction)
    QUALIFY $limit IS NULL OR api_end < gpu_start
         OR row_number() OVER (PARTITION BY sync ORDER BY host_ns DESC, api_start) <= $limit
)
WHERE backlog_ns IS NULL;
