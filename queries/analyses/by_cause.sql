-- by_cause: the long calls where copies are made, one cause each, counted per cause with their evidence.
-- Parameters: $min_ns, $direction, $calls.
-- Copy calls: every long one of $direction and $calls, its cause from rules.sql (call_cause; 'not_computed'
-- where its backlog was not computed, see model/backlog_probes.sql).
-- Host allocations: the long calls that pin host memory (alloc_raw: cudaHostAlloc, cudaMallocHost,
-- cudaHostRegister and their driver twins; what `.pin_memory()` pays when the caching host allocator grows)
-- on a thread that made copy calls, two causes, each only with its evidence:
--   'host_allocation': a copy of its process was in flight during it (issued before the allocation ended, its
--     GPU copy not yet done when it started) and it is inside an NVTX range that holds one of its thread's copy
--     calls (the innermost range of both), or in a function that made copy calls, or anywhere on the thread when
--     the thread has no NVTX ranges;
--   'new_host_allocation': no copy in flight, but on the copy path after the process's first copy call: inside
--     such a range, or in a function that made copy calls (the Python function of its site: Kineto's frames).
-- A one-time allocation at init, before any copy, is neither. Each comes with its call site where the trace
-- has the allocation's Python stack (python_sites).
-- Evidence per cause: calls, host time (total, max), the median backlog ahead and median wait (call start ->
-- its GPU copy start) of the copy calls, the most launches queued ahead, and the longest call's function,
-- NVTX range and call site.
-- alloc_long: a table (with_nvtx reads one by name); the handful of rows of alloc_raw, long or not (a
-- statement before the last cannot take parameters).
CREATE OR REPLACE TEMP TABLE alloc_long AS
SELECT global_tid, correlation_id, start AS api_start, "end" AS api_end, name_id
FROM alloc_raw
WHERE global_tid IN (SELECT DISTINCT global_tid FROM calls_k)
  AND (getvariable('steady_from') IS NULL OR start >= getvariable('steady_from'))   -- --steady-after
  -- one row per call: a CUDA backtrace row repeats its call (as in range_apis.sql)
  AND (event_class IS NULL OR event_class IN (SELECT id FROM n.event_class_enum
                                              WHERE label IN ('CUDA runtime', 'CUDA driver')));

WITH cp AS (
    SELECT COALESCE(call_cause(api_end, gpu_start, gpu_end, host_ns, backlog_ns, queued_ahead, sync,
                      'Pageable' IN (src_kind_name, dst_kind_name)), 'not_computed') AS cause,
           host_ns, backlog_ns, wait_ns, queued_ahead, api, nvtx_range, COALESCE(site_line, site) AS site, api_start
    FROM copies_x
    WHERE selected(direction, sync, $direction, $calls) AND is_long(host_ns, $min_ns)
), al0 AS (
    SELECT a.*, regexp_replace(s.value, '_v[0-9]+$', '') AS api, t.name AS nvtx_range, pn.site AS fn_site,
           COALESCE(pn.site_line, pn.site) AS site,
           a.nvtx_id IN (SELECT nvtx_id FROM calls_k WHERE nvtx_id IS NOT NULL) AS in_copy_range,
           EXISTS (SELECT 1 FROM calls_k c WHERE c.global_pid = global_pid_of(a.global_tid)
                   AND c.api_start < a.api_end AND c.gpu_end > a.api_start) AS copies_in_flight,
           a.api_start > (SELECT min(c.api_start) FROM calls_k c WHERE c.global_pid = global_pid_of(a.global_tid))
               AS after_first_copy
    FROM with_nvtx('alloc_long') a
    LEFT JOIN n.strings s ON s.id = a.name_id
    LEFT JOIN nvtx_tree t ON t.id = a.nvtx_id
    LEFT JOIN python_sites ps ON ps.global_pid = global_pid_of(a.global_tid) AND ps.correlation_id = a.correlation_id
    LEFT JOIN py_site_names pn ON pn.py_site_id = ps.py_site_id
    WHERE is_long(a.api_end - a.api_start, $min_ns)
), copy_functions AS (
    SELECT DISTINCT c.global_tid, split_part(pn.site, ' > ', 1) AS fn
    FROM calls_k c JOIN py_site_names pn ON pn.py_site_id = c.py_site_id
), al1 AS (
    -- the hook names a repo-relative file, a Kineto frame the one torch wrote (`steady_loop.py`) when the file
    -- is not found under the source root: the same function when one path ends with the other
    SELECT a.*, EXISTS (SELECT 1 FROM copy_functions f WHERE f.global_tid = a.global_tid
                        AND (f.fn = split_part(a.fn_site, ' > ', 1)
                             OR suffix(f.fn, '/' || split_part(a.fn_site, ' > ', 1)))) AS in_copy_function
    FROM al0 a
), al AS (
    SELECT CASE WHEN copies_in_flight THEN 'host_allocation' ELSE 'new_host_allocation' END AS cause,
           api_end - api_start AS host_ns, NULL::BIGINT AS backlog_ns, NULL::BIGINT AS wait_ns,
           NULL::BIGINT AS queued_ahead, api, nvtx_range, site, api_start
    FROM al1 a
    -- in a copy function too: the copy hook's ranges hold only the copy, not the .pin_memory() before it
    WHERE (copies_in_flight AND (in_copy_range OR in_copy_function
                                 OR (nvtx_id IS NULL AND global_tid NOT IN (SELECT global_tid FROM nvtx_tree))))
       OR (NOT copies_in_flight AND after_first_copy AND (in_copy_range OR in_copy_function))
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
