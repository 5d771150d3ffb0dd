-- api_summary: every CUDA API function of the runtime table (runtime and driver calls, as nsys stats
-- cuda_api_sum counts them: all rows, per nameId), with its host-side time statistics. No parameters.
-- name: the function's name without a four-digit `_vNNNN` suffix (nsys stats' rule: `_v11010` stays); time_pct: its share of the total time of all
-- functions listed (not of the run's wall time); median_ns: the median of end - start.
WITH s AS (
    SELECT name_id, sum("end" - start)::BIGINT AS total_ns, count(*) AS calls, avg("end" - start) AS avg_ns,
           median("end" - start) AS median_ns, min("end" - start) AS min_ns, max("end" - start) AS max_ns,
           stddev_samp("end" - start) AS stddev_ns
    FROM n.runtime
    GROUP BY name_id
)
SELECT round(s.total_ns * 100.0 / sum(s.total_ns) OVER (), 1) AS time_pct, s.total_ns, s.calls,
       round(s.avg_ns, 1) AS avg_ns, round(s.median_ns, 1) AS median_ns, s.min_ns, s.max_ns,
       round(s.stddev_ns, 1) AS stddev_ns,
       regexp_replace(COALESCE(t.value, '(unnamed ' || s.name_id::VARCHAR || ')'), '_v[0-9][0-9][0-9][0-9]$', '') AS name,
       s.name_id
FROM s
LEFT JOIN n.strings t ON t.id = s.name_id
ORDER BY s.total_ns DESC, name;
