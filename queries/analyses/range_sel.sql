-- range_sel: the NVTX ranges whose wall times are reported (range_times.sql, range_apis.sql), from the
-- nvtx step's nvtx_tree: the step ranges (names matching $pattern) as one key, and the $top other names
-- with the most total wall time. One row per range: id, key (the name; '' for steps), is_step,
-- d = end - start (ns). Parameters: $pattern, $top.
CREATE OR REPLACE TEMP TABLE range_sel AS
WITH r AS (
    SELECT id, regexp_matches(name, $pattern) AS is_step, "end" - start AS d, name
    FROM nvtx_tree WHERE name IS NOT NULL
), keyed AS (
    SELECT id, is_step, d, CASE WHEN is_step THEN '' ELSE name END AS key FROM r
), ranked AS (
    SELECT key, is_step, row_number() OVER (ORDER BY sum(d) DESC, key) AS rank
    FROM keyed WHERE NOT is_step GROUP BY key, is_step
)
SELECT k.id, k.key, k.is_step, k.d
FROM keyed k
WHERE k.is_step OR k.key IN (SELECT key FROM ranked WHERE rank <= $top);
