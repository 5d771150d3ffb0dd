-- function_apis: the CUDA API calls made inside the functions of fn_events (function_times.sql), on the
-- function's thread, per function and API: calls and host time (ns), as range_apis.sql gives them per NVTX range.
-- No parameters.
SELECT f.fn AS name, regexp_replace(COALESCE(s.value, '(unnamed)'), '_v[0-9]+$', '') AS api, count(*) AS calls,
       sum(r."end" - r.start)::BIGINT AS total_ns, 0::BIGINT AS gpu_ns
FROM fn_events f
JOIN n.runtime r ON r.global_tid = f.global_tid AND r.start >= f.start AND r."end" <= f."end"
LEFT JOIN n.strings s ON s.id = r.name_id
GROUP BY ALL
ORDER BY name, total_ns DESC, api;
