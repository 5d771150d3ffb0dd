-- function_apis: the CUDA API calls made inside the functions of fn_events (function_times.sql), on the
-- function's thread, per function and API: calls and host time (ns), as range_apis.sql gives them per NVTX range.
-- A function's calls do not overlap on a thread (fn_events keeps the outermost), so each API call is matched to
-- the last call of each function that started before it (an ASOF join: a sort, linear in the calls, where a
-- pairwise range join grows with calls x events) and counted when it ends inside it. No parameters.
WITH fns AS (
    SELECT DISTINCT fn FROM fn_events
), r AS (
    SELECT r.global_tid, r.start, r."end", r.name_id, f.fn
    FROM n.runtime r CROSS JOIN fns f
    WHERE r.global_tid IN (SELECT DISTINCT global_tid FROM fn_events) AND r."end" >= r.start
), m AS (
    SELECT r.*, e."end" AS fn_end
    FROM r ASOF JOIN fn_events e ON e.global_tid = r.global_tid AND e.fn = r.fn AND r.start >= e.start
)
SELECT m.fn AS name, regexp_replace(COALESCE(s.value, '(unnamed)'), '_v[0-9]+$', '') AS api, count(*) AS calls,
       sum(m."end" - m.start)::BIGINT AS total_ns, 0::BIGINT AS gpu_ns
FROM m
LEFT JOIN n.strings s ON s.id = m.name_id
WHERE m."end" <= m.fn_end
GROUP BY ALL
ORDER BY name, total_ns DESC, api;
