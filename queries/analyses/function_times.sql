-- function_times: host time of the user's Python functions of a Kineto trace (python_function events), per
-- function: occurrences, total, median, p90 and max of end - start, in ns. Only the functions that enclose a copy
-- call or a host allocation on their thread (where the copies' cost can move); an event nested in another of the
-- same function (recursion) is left out, so none is counted twice; the 30 functions with the most host time are kept. Input: user_fns (name_id, fn: the names of
-- k_py that are the user's program, attribution-style keys). Makes fn_events (global_tid, start, end, fn) for
-- function_apis.sql. No parameters.
CREATE OR REPLACE TEMP TABLE fn_events AS
WITH e AS (
    SELECT p.global_tid, p.start, p."end", u.fn
    FROM k_py p JOIN user_fns u ON u.name_id = p.name_id
    WHERE p."end" >= p.start
), marked AS (
    SELECT *, max("end") OVER (PARTITION BY global_tid, fn ORDER BY start, "end" DESC
                               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS outer_end
    FROM e
), outermost AS (
    SELECT global_tid, start, "end", fn FROM marked WHERE outer_end IS NULL OR outer_end < "end"
), copy_calls AS (
    SELECT r.global_tid, r.start, r."end", f.fn
    FROM n.runtime r CROSS JOIN (SELECT DISTINCT fn FROM outermost) f
    WHERE r.name_id IN (SELECT id FROM n.strings WHERE value GLOB 'cu*Memcpy*' OR value GLOB 'cudaHostAlloc*'
                        OR value GLOB 'cudaMallocHost*' OR value GLOB 'cudaHostRegister*')
), moved AS (   -- an ASOF join (linear), as in function_apis.sql: a function's calls do not overlap on a thread
    SELECT DISTINCT c.fn
    FROM copy_calls c ASOF JOIN outermost o ON o.global_tid = c.global_tid AND o.fn = c.fn AND c.start >= o.start
    WHERE c."end" <= o."end"
), kept AS (   -- the 30 with the most host time: what function_apis.sql joins stays bounded
    SELECT fn FROM outermost WHERE fn IN (SELECT fn FROM moved) GROUP BY fn ORDER BY sum("end" - start) DESC, fn LIMIT 30
)
SELECT * FROM outermost WHERE fn IN (SELECT fn FROM kept);

SELECT fn AS name, count(*) AS count, sum("end" - start)::BIGINT AS total_ns,
       median("end" - start)::DOUBLE AS median_ns, quantile_cont("end" - start, 0.9)::DOUBLE AS p90_ns,
       max("end" - start) AS max_ns
FROM fn_events
GROUP BY fn
ORDER BY total_ns DESC, name;
