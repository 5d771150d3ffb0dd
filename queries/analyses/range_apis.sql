-- range_apis: the CUDA API calls (every row of n.runtime: runtime and driver functions) made inside the
-- ranges of range_sel, on the range's own thread, per range key and function: calls and host time (ns).
-- A call counts for every kept range it runs within: its innermost range (with_nvtx) and that range's
-- ancestors in nvtx_tree. Calls with a missing time, and backtrace rows, are left out. No parameters.
-- A table, not a view: with_nvtx copies its input plan, which DuckDB 1.5.5 cannot do for a sqlite scan.
CREATE OR REPLACE TEMP TABLE range_api_calls AS
SELECT global_tid, start AS api_start, "end" AS api_end, name_id
FROM n.runtime
WHERE start IS NOT NULL AND "end" IS NOT NULL
  -- one row per call: a CUDA backtrace row repeats its call's correlationId
  AND (event_class IS NULL OR event_class IN (SELECT id FROM n.event_class_enum
                                              WHERE label IN ('CUDA runtime', 'CUDA driver')));

CREATE OR REPLACE TEMP TABLE range_inner AS
SELECT nvtx_id, name_id, count(*) AS calls, sum(api_end - api_start)::BIGINT AS ns
FROM with_nvtx('range_api_calls') WHERE nvtx_id IS NOT NULL GROUP BY ALL;

WITH RECURSIVE inner_calls AS (SELECT * FROM range_inner), up(id, anc) AS (
    SELECT DISTINCT nvtx_id, nvtx_id FROM inner_calls
    UNION ALL
    SELECT u.id, t.parent_id FROM up u JOIN nvtx_tree t ON t.id = u.anc WHERE t.parent_id IS NOT NULL
)
SELECT s.key AS name, s.is_step,
       regexp_replace(COALESCE(f.value, '(unnamed ' || c.name_id::VARCHAR || ')'), '_v[0-9][0-9][0-9][0-9]$', '') AS api,
       sum(c.calls)::BIGINT AS calls, sum(c.ns)::BIGINT AS total_ns
FROM inner_calls c
JOIN up u ON u.id = c.nvtx_id
JOIN range_sel s ON s.id = u.anc
LEFT JOIN n.strings f ON f.id = c.name_id
GROUP BY ALL
ORDER BY s.is_step DESC, name, total_ns DESC, api;
