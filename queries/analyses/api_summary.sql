-- api_summary: every CUDA API function of the runtime table (runtime and driver calls, as nsys stats
-- cuda_api_sum counts them: all rows, per nameId), with its host-side time statistics, from api_durations
-- (name_id, d = end - start, n = calls of that function that took d: analyses/api_durations.sql). Exact:
-- the median from the cumulative counts, the standard deviation about the mean in a second pass. No
-- parameters.
-- name: the function's name without a four-digit `_vNNNN` suffix (nsys stats' rule: `_v11010` stays); time_pct: its share of the total time of all
-- functions listed (not of the run's wall time); median_ns: the median of end - start (the mean of the two
-- middle values for an even count).
WITH s AS (
    SELECT name_id, sum(n) AS calls, sum(n) FILTER (WHERE d IS NOT NULL) AS valued,
           sum(d::HUGEINT * n) AS total, min(d) AS min_ns, max(d) AS max_ns
    FROM api_durations GROUP BY name_id
), c AS (
    SELECT name_id, d, sum(n) OVER (PARTITION BY name_id ORDER BY d ROWS UNBOUNDED PRECEDING) AS upto
    FROM api_durations WHERE d IS NOT NULL
), m AS (
    -- the values at the middle positions (valued + 1) // 2 and valued // 2 + 1 (the same one for an odd count)
    SELECT name_id, min(d) FILTER (WHERE upto >= (s.valued + 1) // 2) AS lo,
           min(d) FILTER (WHERE upto >= s.valued // 2 + 1) AS hi
    FROM c JOIN s USING (name_id) GROUP BY name_id
), v AS (
    SELECT name_id, sqrt(sum(g.n * ((g.d - s.total::DOUBLE / s.valued) ^ 2)) / (s.valued - 1)) AS stddev_ns
    FROM api_durations g JOIN s USING (name_id) WHERE g.d IS NOT NULL AND s.valued > 1 GROUP BY name_id, s.valued
)
SELECT round(s.total * 100.0 / sum(s.total) OVER (), 1) AS time_pct, s.total::BIGINT AS total_ns, s.calls,
       round(s.total::DOUBLE / s.valued, 1) AS avg_ns,
       round(m.lo::DOUBLE + (m.hi::DOUBLE - m.lo::DOUBLE) * 0.5, 1) AS median_ns, s.min_ns, s.max_ns,
       round(v.stddev_ns, 1) AS stddev_ns,
       regexp_replace(COALESCE(t.value, '(unnamed ' || s.name_id::VARCHAR || ')'), '_v[0-9][0-9][0-9][0-9]$', '') AS name,
       s.name_id
FROM s
LEFT JOIN m USING (name_id)
LEFT JOIN v USING (name_id)
LEFT JOIN n.strings t ON t.id = s.name_id
ORDER BY s.total DESC, name;
