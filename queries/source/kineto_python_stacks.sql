-- kineto_python_stacks: the Python frames of each copy call of a Kineto trace: the innermost python_function
-- event that encloses the call on its thread, then its parents by "Python parent id" (64 frames at most).
-- Columns: global_pid, correlation_id, stack (the innermost frame's id: the stack's key), depth (0 =
-- innermost), name (as Kineto writes it: `file.py(line): function`). No parameters.
WITH RECURSIVE py AS (   -- one row per id, whatever a damaged file repeats
    SELECT py_id, min(parent_id) AS parent_id, min(name_id) AS name_id FROM k_py GROUP BY ALL
), calls AS (
    SELECT DISTINCT r.start, r."end", r.global_tid, r.correlation_id
    FROM n.runtime r
    WHERE r.name_id IN (SELECT id FROM n.strings WHERE value GLOB 'cu*Memcpy*')
), inner_frame AS (
    SELECT c.global_tid, c.correlation_id, arg_max(p.py_id, p.start) AS py_id
    FROM calls c JOIN k_py p ON p.global_tid = c.global_tid AND p.start <= c.start AND p."end" >= c."end"
    GROUP BY ALL
), frames AS (
    SELECT DISTINCT py_id FROM inner_frame
), chain AS (
    SELECT py_id AS stack, py_id, 0 AS depth FROM frames
    UNION ALL
    SELECT c.stack, p.parent_id, c.depth + 1
    FROM chain c JOIN py p ON p.py_id = c.py_id
    WHERE p.parent_id >= 0 AND c.depth < 64
)
SELECT global_pid_of(i.global_tid) AS global_pid, i.correlation_id, c.stack, c.depth, s.value AS name
FROM inner_frame i
JOIN chain c ON c.stack = i.py_id
JOIN py p ON p.py_id = c.py_id
JOIN n.strings s ON s.id = p.name_id
ORDER BY ALL;
