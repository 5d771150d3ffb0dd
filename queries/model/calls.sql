-- calls: one row per memcpy API call (view `calls`: the single-row calls of `copies` and the
-- folded ones; calls_plain.sql made it already when nothing was folded), the counts anomalies.sql reports
-- (table copy_stats), and the copy activity no call claims (view unclaimed_activity, for orphans.sql).
-- api_raw (and copies_join's view of it) is no longer needed after this step. The variable api_rows: the number of
-- calls where the compiled pass left api_raw empty (percall_api_rows.sql). No parameters.
CREATE TEMP VIEW IF NOT EXISTS calls AS
SELECT c.* FROM copies c ANTI JOIN copy_keys_multi k USING (global_pid, correlation_id)
UNION ALL BY NAME
SELECT * FROM folded;

CREATE TEMP TABLE copy_stats AS
SELECT COALESCE((SELECT api_rows_without_activity FROM fold_stats),
                COALESCE(getvariable('api_rows'), (SELECT count(*) FROM api_raw)) - (SELECT count(*) FROM copies))
           AS api_rows_without_activity,
       COALESCE((SELECT memcpy_duplicates FROM fold_stats), 0) AS memcpy_duplicates,
       COALESCE((SELECT shared_correlation FROM fold_stats), 0) AS shared_correlation,
       COALESCE((SELECT disagreeing_rows FROM fold_stats), 0) AS disagreeing_rows;

DROP VIEW IF EXISTS api_calls;   -- copies_join.sql ran on no range when there were no calls
DROP TABLE api_raw;

-- unclaimed_activity: (global_pid, correlation_id) of memcpy rows no call has. Two anti joins on equalities
-- (activity rows without a globalPid match any process): one with an OR in its condition is a nested loop.
CREATE TEMP VIEW unclaimed_activity AS
SELECT m.global_pid, m.correlation_id FROM memcpy_raw m ANTI JOIN calls c USING (correlation_id)
WHERE m.global_pid IS NULL
UNION ALL
SELECT m.global_pid, m.correlation_id FROM memcpy_raw m ANTI JOIN calls c USING (global_pid, correlation_id)
WHERE m.global_pid IS NOT NULL;
