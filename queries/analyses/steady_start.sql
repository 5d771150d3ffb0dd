-- steady_start: where a trace's steady state starts, for --steady-after (analyses/steady.py): `start` (ns) is the
-- first API call's start plus $skip_ns (kind 'time'), or the start of the first NVTX range named $name (kind
-- 'range'; NULL when there is none); `before` counts the copy calls that start before it (left out). Parameters:
-- $kind, $name, $skip_ns.
WITH s AS (
    SELECT CASE $kind WHEN 'time' THEN (SELECT min(start) FROM n.runtime) + $skip_ns
                      ELSE (SELECT min(start) FROM n.nvtx_ranges WHERE name = $name) END AS start,
           (SELECT min(start) FROM n.runtime) AS first_call
)
SELECT s.start, s.first_call, (SELECT count(*) FROM calls c WHERE c.api_start < s.start) AS before
FROM s;
