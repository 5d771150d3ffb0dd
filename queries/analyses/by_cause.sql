-- by_cause: the long calls where copies are made, one cause each, counted per cause with their evidence.
-- Parameters: $min_ns, $direction, $calls.
-- Copy calls: every long one of $direction and $calls, its cause from rules.sql (call_cause; 'not_computed'
-- where its backlog was not computed, see model/backlog_probes.sql).
-- Host allocations: the long calls that pin host memory (alloc_raw: cudaHostAlloc, cudaMallocHost,
-- cudaHostRegister and their driver twins; what `.pin_memory()` pays when the caching host allocator grows)
-- on a thread that made copy calls, inside an NVTX range that holds one of its copy calls (the innermost
-- range of both), or anywhere on it when the thread has no NVTX ranges: cause 'host_allocation'.
-- Evidence per cause: calls, host time (total, max), the median backlog ahead and median wait (call start ->
-- its GPU copy start) of the copy calls, the most launches queued ahead, and the longest call's function,
-- NVTX range and call site.
-- alloc_long: a table (with_nvtx reads one by name); the handful of rows of alloc_raw, long or not (a
-- statement before the last cannot take parameters).
CREATE OR REPLACE TEMP TABLE alloc_long AS
SELECT global_tid, start AS api_start, "end" AS api_end, name_id
FROM alloc_raw
WHERE global_tid IN (SELECT DISTINCT global_tid FROM calls_k)
  -- one row per call: a CUDA backtrace row repeats its call (as in range_apis.sql)
  AND (event_class IS NULL OR event_class IN (SELECT id FROM n.event_class_enum
                                              WHERE label IN ('CUDA runtime', 'CUDA driver')));

WITH cp AS (
    SELECT COALESCE(call_cause(api_end, gpu_start, gpu_end, host_ns, backlog_ns, queued_ahead, sync,
                      'Pageable' IN (src_kind_name, dst_kind_name)), 'not_computed') AS cause,
           host_ns, backlog_ns, wait_ns, queued_ahead, api, nvtx_range, COALESCE(site_line, site) AS site, api_start
    FROM copies_x
    WHERE selected(direction, sync, $direction, $calls) AND is_long(host_ns, $min_ns)
), al AS (
    SELECT 'host_allocation' AS cause, a.api_end - a.api_start AS host_ns, NULL::BIGINT AS backlog_ns,
           NULL::BIGINT AS wait_ns, NULL::BIGINT AS queued_ahead,
           regexp_replace(s.value, '_v[0-9]+$', '') AS api, t.name AS nvtx_range, NULL::VARCHAR AS site, a.api_start
    FROM with_nvtx('alloc_long') a
    LEFT JOIN n.strings s ON s.id = a.name_id
    LEFT JOIN nvtx_tree t ON t.id = a.nvtx_id
    WHERE is_long(a.api_end - a.api_start, $min_ns)
      AND (a.nvtx_id IN (SELECT nvtx_id FROM calls_k WHERE nvtx_id IS NOT NULL)
           OR (a.nvtx_id IS NULL AND a.global_tid NOT IN (SELECT global_tid FROM nvtx_tree)))
), every AS (
    SELECT * FROM cp UNION ALL SELECT * FROM al
)
SELECT cause, count(*) AS calls, sum(host_ns)::BIGINT AS host_ns, max(host_ns) AS max_ns,
       median(backlog_ns)::BIGINT AS backlog_p50_ns, median(wait_ns)::BIGINT AS wait_p50_ns,
       max(queued_ahead) AS queued_ahead_max,
       arg_max(api, (host_ns, -api_start)) AS longest_api,
       arg_max(nvtx_range, (host_ns, -api_start)) AS longest_nvtx_range,
       arg_max(site, (host_ns, -api_start)) AS longest_site
FROM every
GROUP BY cause
ORDER BY host_ns DESC, cause;
