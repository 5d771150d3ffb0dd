-- api_durations: calls per CUDA API function and host duration, over every row of the runtime table (what
-- api_summary.sql summarizes). DuckDB's sqlite scanner reads the three columns on all cores and counts
-- as it scans, so memory holds the distinct durations, not the calls. No parameters.
--   name_id  the function (StringIds id); d  end - start in ns (NULL where a time is missing: n.runtime's
--   rule, a time of +-2^62 ns or more); n  calls of that function that took d
CREATE TEMP TABLE api_durations AS
SELECT name_id, "end" - start AS d, count(*) AS n FROM n.runtime GROUP BY ALL;
