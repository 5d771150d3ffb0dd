-- kineto_python_stacks: the Python frames of each copy call (and host allocation) of a Kineto trace: the python_function events on the
-- call's thread that enclose it, innermost first. Events on a thread nest, so the last one to start before the
-- call (an ASOF join: a sort, not a pairwise range join, which ran out of memory on a 1 GB trace) is either the
-- innermost enclosing one or a sibling of it, and the enclosing ones are among its ancestors by "Python parent
-- id" (64 frames at most). Columns: global_pid, correlation_id, stack (the key of the call's stack: its
-- correlation id and thread), depth (0 = innermost), name (as Kineto writes it: `file.py(line): function`).
-- The small side of each join is written on the right: it is the one hashed. No parameters.
WITH RECURSIVE calls AS (
    SELECT DISTINCT start, "end", global_tid, correlation_id
    FROM n.runtime
    WHERE name_id IN (SELECT id FROM n.strings WHERE value GLOB 'cu*Memcpy*' OR value GLOB 'cudaHostAlloc*'
                      OR value GLOB 'cudaMallocHost*' OR value GLOB 'cudaHostRegister*')
), last_before AS (
    SELECT c.global_tid, c.correlation_id, c.start AS c_start, c."end" AS c_end, p.py_id
    FROM calls c ASOF JOIN k_py p ON p.global_tid = c.global_tid AND c.start >= p.start
), chain AS (
    SELECT global_tid, correlation_id, c_start, c_end, py_id, 0 AS hop FROM last_before
    UNION
    SELECT c.global_tid, c.correlation_id, c.c_start, c.c_end, p.parent_id, c.hop + 1
    FROM k_py p JOIN chain c ON p.py_id = c.py_id AND p.global_tid = c.global_tid
    WHERE p.parent_id >= 0 AND c.hop < 64
), frames AS (
    SELECT c.global_tid, c.correlation_id, c.hop, min(p.name_id) AS name_id
    FROM k_py p JOIN chain c ON p.py_id = c.py_id AND p.global_tid = c.global_tid
    WHERE p.start <= c.c_start AND p."end" >= c.c_end
    GROUP BY ALL
)
SELECT global_pid_of(f.global_tid) AS global_pid, f.correlation_id,
       hash(f.global_tid, f.correlation_id) AS stack,
       row_number() OVER (PARTITION BY f.global_tid, f.correlation_id ORDER BY f.hop) - 1 AS depth, s.value AS name
FROM frames f JOIN n.strings s ON s.id = f.name_id
ORDER BY ALL;
