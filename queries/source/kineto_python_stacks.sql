-- kineto_python_stacks: the Python frames of each copy call (and host allocation) of a Kineto trace: the python_function events on the
-- call's thread that enclose it, innermost first. Events on a thread nest, so the last one to start before the
-- call (an ASOF join: a sort, not a pairwise range join, which ran out of memory on a 1 GB trace) is either the
-- innermost enclosing one or a sibling of it, and the enclosing ones are among its ancestors by "Python parent
-- id" (64 frames at most). The walk runs once per distinct starting event, not per call, and each distinct
-- stack is written out once: 300,000 calls under one stack made 19 M rows per call and frame (out of memory).
-- Rows: one per call (global_pid, correlation_id, stack: a number per distinct stack; depth and name NULL), then
-- one per frame of each distinct stack (stack, depth: 0 = innermost, name as Kineto writes it:
-- `file.py(line): function`; global_pid and correlation_id NULL). kineto.py refuses "Python id"s shared on a
-- thread, so each step of the walk meets one event. The small side of each join is written on the right: it is
-- the one hashed. No parameters.
WITH RECURSIVE calls AS (
    SELECT DISTINCT start, "end", global_tid, correlation_id
    FROM n.runtime
    WHERE name_id IN (SELECT id FROM n.strings WHERE value GLOB 'cu*Memcpy*' OR value GLOB 'cudaHostAlloc*'
                      OR value GLOB 'cudaMallocHost*' OR value GLOB 'cudaHostRegister*')
), last_before AS (
    SELECT c.global_tid, c.correlation_id, c.start AS c_start, c."end" AS c_end, p.py_id
    FROM calls c ASOF JOIN k_py p ON p.global_tid = c.global_tid AND c.start >= p.start
), chain AS (
    SELECT DISTINCT global_tid, py_id AS first_id, py_id, 0 AS hop FROM last_before
    UNION ALL
    SELECT c.global_tid, c.first_id, p.parent_id, c.hop + 1
    FROM k_py p JOIN chain c ON p.py_id = c.py_id AND p.global_tid = c.global_tid
    WHERE p.parent_id >= 0 AND c.hop < 64
), walked AS (
    SELECT c.global_tid, c.first_id, c.hop, p.start, p."end", p.name_id
    FROM k_py p JOIN chain c ON p.py_id = c.py_id AND p.global_tid = c.global_tid
), stacks AS (
    SELECT l.global_tid, l.correlation_id, list(w.name_id ORDER BY w.hop) AS ids
    FROM last_before l JOIN walked w ON w.global_tid = l.global_tid AND w.first_id = l.py_id
    WHERE w.start <= l.c_start AND w."end" >= l.c_end
    GROUP BY ALL
), keyed AS (
    SELECT global_tid, correlation_id, ids, dense_rank() OVER (ORDER BY ids) AS stack FROM stacks
), one AS (
    SELECT DISTINCT ON (stack) stack, ids FROM keyed
)
SELECT global_pid_of(global_tid) AS global_pid, correlation_id, stack, CAST(NULL AS BIGINT) AS depth,
       CAST(NULL AS VARCHAR) AS name
FROM keyed
UNION ALL
SELECT NULL, NULL, o.stack, f.depth - 1, s.value
FROM (SELECT stack, unnest(ids) AS name_id, generate_subscripts(ids, 1) AS depth FROM one) f
JOIN one o USING (stack)
JOIN n.strings s ON s.id = f.name_id
ORDER BY ALL;
