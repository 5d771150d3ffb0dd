-- sqlite_api_durations: the expression SQLite itself evaluates for every row of CUPTI_ACTIVITY_KIND_RUNTIME
-- while ingest.py reads it for api-summary (SQLite syntax, raw nsys column names): the call's nameId
-- (high 23 bits) and host duration end - start in ns (low 40 bits: up to 18 minutes) packed into one
-- integer, so that one value per call crosses into DuckDB instead of three (measured: 1.1 s instead of
-- 2.3 s for 20 M rows on 2 cores). NULL for a call that does not fit (a NULL, text or out-of-range time,
-- a huge id): analyses/api_summary.py reads those few rows apart. Parameters: $time_limit (schema.TIME_LIMIT:
-- a time beyond it is missing, as in the normalized views) and $start_limit ($time_limit - 1099511627775):
-- a start up to it and an end within 2^40 ns after it are both within the limit, so the end needs no check
-- of its own (one comparison fewer per row of tens of millions).
CASE WHEN nameId BETWEEN 0 AND 8388607 AND start BETWEEN -$time_limit AND $start_limit
     AND "end" BETWEEN start AND start + 1099511627775
     THEN (nameId << 40) | ("end" - start) END
