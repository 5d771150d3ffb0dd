-- orphans: memcpy activity that no memcpy API call claims: its API call is missing from the runtime table,
-- has no name in StringIds, or a name that is no copy API (table orphan_stats, made by store.sql). Such
-- copies cannot be judged: an export whose StringIds lost the API names would otherwise read as "no copies".
-- Copies inside CUDA graphs belong to the graph launch (cudaGraphLaunch, cuGraphLaunch) of the same process
-- and are not counted, but only where every activity row of the key says it came from a graph (graphNodeId,
-- n.memcpy_graph): a copy call renamed to a graph launch excuses no copy without a graph node id (issue 54),
-- nor does a launch of another process sharing the correlationId (ids are per process). Nor are copies issued before the capture began (before_capture): correlation ids grow with each
-- call, and theirs is below every call the trace holds of their process (of any process, where the row names
-- none), as when torch.profiler starts recording while copies issued earlier still run, and nothing issued during
-- the capture ran before them on their stream (a stream runs its work in the order issued): an id edited below
-- the first call's does not excuse a copy that ran after captured work on its stream. Runs only when some
-- activity is unclaimed (view unclaimed_activity, calls.sql): it scans the runtime table, and the GPU work of
-- the streams of copies with such ids. No parameters.
INSERT INTO orphan_stats
WITH o AS (SELECT DISTINCT * FROM unclaimed_activity),
graph AS (
    SELECT DISTINCT global_pid_of(r.global_tid) AS global_pid, r.correlation_id
    FROM n.runtime r JOIN n.strings s ON s.id = r.name_id
    WHERE r.correlation_id IN (SELECT correlation_id FROM o) AND s.value LIKE 'cu%Graph%Launch%'
),
-- keys some activity row of which names no graph node: no graph made that copy
not_graph AS (
    SELECT DISTINCT m.global_pid, m.correlation_id FROM n.memcpy_graph m
    WHERE m.correlation_id IN (SELECT correlation_id FROM graph) AND m.graph_node_id IS NULL
),
first_call AS (SELECT global_pid_of(global_tid) AS global_pid, min(correlation_id) AS first FROM n.runtime GROUP BY ALL),
-- activity rows without a globalPid match a launch of any process (as in calls.sql)
kept AS (
    SELECT o.*, o.correlation_id < COALESCE((SELECT first FROM first_call f WHERE f.global_pid = o.global_pid),
                                            (SELECT min(first) FROM first_call)) AS early
    FROM o
    WHERE NOT EXISTS (SELECT 1 FROM graph g WHERE g.correlation_id = o.correlation_id
                      AND (o.global_pid IS NULL OR g.global_pid = o.global_pid)
                      AND NOT EXISTS (SELECT 1 FROM not_graph x WHERE x.correlation_id = o.correlation_id
                                      AND x.global_pid IS NOT DISTINCT FROM o.global_pid))
),
early_rows AS (
    SELECT m.device_id, m.stream_id, m.start, m.global_pid, m.correlation_id
    FROM memcpy_raw m SEMI JOIN kept k ON k.early AND k.correlation_id = m.correlation_id
                                          AND k.global_pid IS NOT DISTINCT FROM m.global_pid
),
-- per stream of such a copy, when work issued during the capture (its id not below its process's first call's)
-- first ran there
captured AS (
    SELECT a.device_id, a.stream_id, min(a.start) AS first_start
    FROM (SELECT device_id, stream_id, start, correlation_id, global_pid FROM n.memcpy
          UNION ALL SELECT device_id, stream_id, start, correlation_id, global_pid FROM n.kernel
          UNION ALL SELECT device_id, stream_id, start, correlation_id, global_pid FROM n.memset) a
    SEMI JOIN (SELECT DISTINCT device_id, stream_id FROM early_rows) s USING (device_id, stream_id)
    LEFT JOIN first_call f ON f.global_pid = a.global_pid
    WHERE a.correlation_id >= COALESCE(f.first, (SELECT min(first) FROM first_call))
    GROUP BY ALL
),
late AS (
    SELECT DISTINCT e.global_pid, e.correlation_id FROM early_rows e JOIN captured c USING (device_id, stream_id)
    WHERE c.first_start < e.start
),
judged AS (
    SELECT k.early AND NOT EXISTS (SELECT 1 FROM late l WHERE l.correlation_id = k.correlation_id
                                   AND l.global_pid IS NOT DISTINCT FROM k.global_pid) AS before_capture
    FROM kept k
)
SELECT count(*) FILTER (WHERE before_capture IS NOT TRUE), count(*) FILTER (WHERE before_capture) FROM judged;
