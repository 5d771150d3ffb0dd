-- calls: one row per memcpy API call (view `calls`: the single-row calls of `copies` and the
-- folded ones), and the counts anomalies.sql reports (table copy_stats). api_raw is no longer needed
-- after this step (the pipeline drops it). No parameters.
CREATE TEMP VIEW calls AS
SELECT c.* FROM copies c ANTI JOIN copy_keys_multi k USING (global_pid, correlation_id)
UNION ALL BY NAME
SELECT * FROM folded;

CREATE TEMP TABLE copy_stats AS
SELECT COALESCE((SELECT api_rows_without_activity FROM fold_stats),
                (SELECT count(*) FROM api_raw) - (SELECT count(*) FROM copies)) AS api_rows_without_activity,
       COALESCE((SELECT memcpy_duplicates FROM fold_stats), 0) AS memcpy_duplicates,
       COALESCE((SELECT shared_correlation FROM fold_stats), 0) AS shared_correlation;

DROP TABLE api_raw;
