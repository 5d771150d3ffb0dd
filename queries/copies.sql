-- copies: after every part is in (copies_part.sql): the keys with several rows (calls with several
-- runtime rows, e.g. with --cudabacktrace, or several activity rows; analysis.py then runs
-- copies_fold.sql) and the counts anomalies.sql reports (copy_stats). No parameters.
-- copies is narrow (ids and integers only); the labels, NVTX names and attribution are joined in by
-- the view copies_x.
CREATE TEMP TABLE copy_keys_multi AS
SELECT global_pid, correlation_id FROM copies GROUP BY global_pid, correlation_id HAVING count(*) > 1;

CREATE TEMP TABLE copy_stats AS
SELECT (SELECT count(*) FROM api_raw) - (SELECT count(*) FROM copies) AS api_rows_without_activity,
       0::BIGINT AS memcpy_duplicates;
