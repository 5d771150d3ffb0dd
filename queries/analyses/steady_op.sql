-- steady_op: the start (ns) of the first CPU op (cpu_op events) named $name, or of the first call of the Python
-- function $name (python_function events, `file.py(line): $name`), of a Kineto trace; NULL when there is none;
-- with the first API call's start and the copy calls before it (as steady_start.sql). Parameter: $name.
WITH s AS (
    SELECT least((SELECT min(start) FROM k_ops WHERE name_id IN (SELECT id FROM n.strings WHERE value = $name)),
                 (SELECT min(start) FROM k_py WHERE name_id IN (SELECT id FROM n.strings
                                                             WHERE suffix(value, '): ' || $name)))) AS start,
           (SELECT min(start) FROM n.runtime) AS first_call
)
SELECT s.start, s.first_call, (SELECT count(*) FROM calls c WHERE c.api_start < s.start) AS before
FROM s;
