-- copies: after the join (copies_join.sql), the keys with several rows in `copies` (calls with
-- several runtime rows, e.g. with --cudabacktrace, or several activity rows): copies_fold.sql makes
-- one row of each. No parameters.
CREATE TEMP TABLE copy_keys_multi AS
SELECT global_pid, correlation_id FROM copies GROUP BY global_pid, correlation_id HAVING count(*) > 1;
