-- function_times: host time of the user's Python functions of a Kineto trace (python_function events), per
-- function: occurrences, total, median, p90 and max of end - start, in ns. Only the functions that enclose a copy
-- call or a host allocation on their thread (where the copies' cost can move); an event nested in another of the
-- same function (recursion) is left out, so none is counted twice. Input: user_fns (name_id, fn: the names of
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
), moved AS (
    SELECT DISTINCT o.fn
    FROM outermost o JOIN n.runtime r ON r.global_tid = o.global_tid AND r.start >= o.start AND r."end" <= o."end"
    WHERE r.name_id IN (SELECT id FROM n.strings WHERE value GLOB 'cu*Memcpy*' OR value GLOB 'cudaHostAlloc*'
                        OR value GLOB 'cudaMallocHost*' OR value GLOB 'cudaHostRegister*')
)
SELECT * FROM outermost WHERE fn IN (SELECT fn FROM moved);

SELECT fn AS name, count(*) AS count, sum("end" - start)::BIGINT AS total_ns,
       median("end" - start)::DOUBLE AS median_ns, quantile_cont("end" - start, 0.9)::DOUBLE AS p90_ns,
       max("end" - start) AS max_ns
FROM fn_events
GROUP BY fn
ORDER BY total_ns DESC, name;
