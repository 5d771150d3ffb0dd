-- step_pattern: whether some range (nvtx step's nvtx_ranges) matches the step pattern asked for ($pattern),
-- and whether some matches $fallback (torch.profiler's ProfilerStep#N), for options.steps_in. Parameters:
-- $pattern, $fallback.
SELECT EXISTS (SELECT 1 FROM nvtx_ranges WHERE regexp_matches(name, $pattern)) AS own,
       EXISTS (SELECT 1 FROM nvtx_ranges WHERE regexp_matches(name, $fallback)) AS fallback;
