-- range_apis: the CUDA API calls (every row of n.runtime: runtime and driver functions) made inside the
-- ranges of range_sel, on the range's own thread, per range key and function: calls, host time and the GPU
-- time of the kernels they launched (ns).
-- A call counts for every kept range it runs within: its innermost range (with_nvtx) and that range's
-- ancestors in nvtx_tree. Calls with a missing time, and backtrace rows, are left out. No parameters.
-- A table, not a view: with_nvtx copies its input plan, which DuckDB 1.5.5 cannot do for a sqlite scan.
CREATE OR REPLACE TEMP TABLE range_api_calls AS
SELECT global_tid, start AS api_start, "end" AS api_end, name_id, correlation_id
FROM n.runtime
WHERE start IS NOT NULL AND "end" IS NOT NULL
  AND global_tid IN (SELECT DISTINCT global_tid FROM nvtx_tree)   -- a call elsewhere gets no range
  -- one row per call: a CUDA backtrace row repeats its call's correlationId
  AND (event_class IS NULL OR event_class IN (SELECT id FROM n.event_class_enum
                                              WHERE label IN ('CUDA runtime', 'CUDA driver')));

-- per innermost range and function: calls, host time, and the GPU time of the kernels those calls launched
-- (matched by process and correlationId; a CUDA graph's kernels only when traced per node)
CREATE OR REPLACE TEMP TABLE range_inner AS
WITH c AS (SELECT * FROM with_nvtx('range_api_calls') WHERE nvtx_id IS NOT NULL),
k AS (SELECT global_pid, correlation_id, sum("end" - start) AS gpu FROM n.kernel GROUP BY ALL)
SELECT c.nvtx_id, c.name_id, count(*) AS calls, sum(c.api_end - c.api_start)::BIGINT AS ns,
       COALESCE(sum(k.gpu), 0)::BIGINT AS gpu_ns
FROM c LEFT JOIN k ON k.global_pid = global_pid_of(c.global_tid) AND k.correlation_id = c.correlation_id
GROUP BY ALL;

WITH RECURSIVE inner_calls AS (SELECT * FROM range_inner), up(id, anc) AS (
    SELECT DISTINCT nvtx_id, nvtx_id FROM inner_calls
    UNION ALL
    SELECT u.id, t.parent_id FROM up u JOIN nvtx_tree t ON t.id = u.anc WHERE t.parent_id IS NOT NULL
)
SELECT s.key AS name, s.is_step,
       regexp_replace(COALESCE(f.value, '(unnamed ' || c.name_id::VARCHAR || ')'), '_v[0-9][0-9][0-9][0-9]$', '') AS api,
       sum(c.calls)::BIGINT AS calls, sum(c.ns)::BIGINT AS total_ns, sum(c.gpu_ns)::BIGINT AS gpu_ns
FROM inner_calls c
JOIN up u ON u.id = c.nvtx_id
JOIN range_sel s ON s.id = u.anc
LEFT JOIN n.strings f ON f.id = c.name_id
GROUP BY ALL
ORDER BY s.is_step DESC, name, total_ns DESC, api;
