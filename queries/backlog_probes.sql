-- backlog_probes: the calls whose stream backlog a report needs and that `backlog` does not hold
-- yet (temp table `probes`). Parameters: $min_ns, $direction, $limit.
-- A long call needs it when it returned before its GPU copy started (the backlog then decides
-- whether it waited for the GPU, see copies_x.sql) or when it is among the $limit longest (top.sql
-- shows the backlog). Every other call's flag does not depend on it. $min_ns = 0 and $limit = NULL
-- ask for every call.
CREATE OR REPLACE TEMP TABLE probes AS
SELECT * FROM (
    SELECT c.global_pid, c.correlation_id, c.api_start, c.gpu_start, c.device_id, c.stream_id
    FROM copies c
    JOIN kind_labels k
      ON k.copy_kind IS NOT DISTINCT FROM c.copy_kind AND k.src_kind IS NOT DISTINCT FROM c.src_kind
     AND k.dst_kind IS NOT DISTINCT FROM c.dst_kind
    WHERE c.api_end - c.api_start >= $min_ns
      AND ($direction = 'all' OR k.direction = $direction)
    QUALIFY $limit IS NULL OR c.api_end < c.gpu_start
         OR row_number() OVER (ORDER BY c.api_end - c.api_start DESC, c.api_start) <= $limit
) p
WHERE NOT EXISTS (SELECT 1 FROM backlog b WHERE b.global_pid = p.global_pid AND b.correlation_id = p.correlation_id);
