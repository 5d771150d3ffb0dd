-- range_times: wall time (end - start) per NVTX range name, over the ranges of range_sel: occurrences,
-- total, median and 90th percentile (linear interpolation between the two nearest values, numpy's
-- default; the median of an even count is the mean of the middle two) and max, in ns; the step ranges
-- as one row (is_step, name ''). left_out: how many other names range_sel did not keep. Parameter: $pattern
-- (the step ranges, as in range_sel.sql).
SELECT key AS name, is_step, count(*) AS count, sum(d)::BIGINT AS total_ns,
       median(d)::DOUBLE AS median_ns, quantile_cont(d, 0.9)::DOUBLE AS p90_ns, max(d) AS max_ns,
       (SELECT count(DISTINCT name) FROM nvtx_tree WHERE name IS NOT NULL AND NOT regexp_matches(name, $pattern))
       - (SELECT count(DISTINCT key) FROM range_sel WHERE NOT is_step) AS left_out
FROM range_sel
GROUP BY key, is_step
ORDER BY is_step DESC, total_ns DESC, name;
