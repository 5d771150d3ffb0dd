-- steps: how many NVTX ranges mark a step (step_ranges, nvtx.sql: name matching the regular expression
-- $pattern, not shorter than 10 us, not overlapping an earlier step range of its process), their total wall time, for
-- per-step normalization, and how many ranges matching the pattern are not counted as steps (not_counted).
SELECT count(*) AS steps, COALESCE(sum("end" - start), 0)::BIGINT AS step_ns,
       (SELECT count(*) FROM nvtx_ranges WHERE regexp_matches(name, $pattern)) - count(*) AS not_counted
FROM step_ranges($pattern);
