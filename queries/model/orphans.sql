-- orphans: memcpy activity that no memcpy API call claims: its API call is missing from the runtime table,
-- has no name in StringIds, or a name that is no copy API (table orphan_stats, made by store.sql). Such
-- copies cannot be judged: an export whose StringIds lost the API names would otherwise read as "no copies".
-- Copies inside CUDA graphs belong to the graph launch (cudaGraphLaunch, cuGraphLaunch) of the same process
-- and are not counted, but only where every activity row of the key says it came from a graph (graphNodeId,
-- n.memcpy_graph): a copy call renamed to a graph launch excuses no copy without a graph node id (issue 54),
-- nor does a launch of another process sharing the correlationId (ids are per process). Nor are copies issued before the capture began (before_capture): correlation ids grow with each
-- call, and theirs is below every call the trace holds of their process (of any process, where the row names
-- none), as when torch.profiler starts recording while copies issued earlier still run. Runs only when some
-- activity is unclaimed (view unclaimed_activity, calls.sql): it scans the runtime table. No parameters.
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
                                            (SELECT min(first) FROM first_call)) AS before_capture
    FROM o
    WHERE NOT EXISTS (SELECT 1 FROM graph g WHERE g.correlation_id = o.correlation_id
                      AND (o.global_pid IS NULL OR g.global_pid = o.global_pid)
                      AND NOT EXISTS (SELECT 1 FROM not_graph x WHERE x.correlation_id = o.correlation_id
                                      AND x.global_pid IS NOT DISTINCT FROM o.global_pid))
)
SELECT count(*) FILTER (WHERE before_capture IS NOT TRUE), count(*) FILTER (WHERE before_capture) FROM kept;
