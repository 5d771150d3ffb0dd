-- steps: how many NVTX ranges mark a step (name matching the regular expression $pattern), and
-- their total wall time, for per-step normalization.
SELECT count(*) AS steps, COALESCE(sum("end" - start), 0)::BIGINT AS step_ns
FROM nvtx_ranges
WHERE regexp_matches(name, $pattern);
