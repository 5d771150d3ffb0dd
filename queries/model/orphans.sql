-- orphans: memcpy activity that no memcpy API call claims: its API call is missing from the runtime table,
-- has no name in StringIds, or a name that is no copy API (table orphan_stats, made by store.sql). Such
-- copies cannot be judged: an export whose StringIds lost the API names would otherwise read as "no copies".
-- Copies inside CUDA graphs belong to the graph launch (cudaGraphLaunch, cuGraphLaunch) and are not counted. Runs only when
-- some activity is unclaimed (pipeline.py): it scans the runtime table. No parameters.
-- unclaimed_activity: (global_pid, correlation_id) of memcpy rows no call has. Two anti joins on equalities
-- (activity rows without a globalPid match any process): one with an OR in its condition is a nested loop.
CREATE OR REPLACE TEMP VIEW unclaimed_activity AS
SELECT m.global_pid, m.correlation_id FROM memcpy_raw m ANTI JOIN calls c USING (correlation_id)
WHERE m.global_pid IS NULL
UNION ALL
SELECT m.global_pid, m.correlation_id FROM memcpy_raw m ANTI JOIN calls c USING (global_pid, correlation_id)
WHERE m.global_pid IS NOT NULL;

INSERT INTO orphan_stats
WITH o AS (SELECT DISTINCT * FROM unclaimed_activity),
graph AS (
    SELECT DISTINCT r.correlation_id FROM n.runtime r JOIN n.strings s ON s.id = r.name_id
    WHERE r.correlation_id IN (SELECT correlation_id FROM o) AND s.value LIKE 'cu%Graph%Launch%'
)
SELECT count(*) FROM o ANTI JOIN graph USING (correlation_id);
