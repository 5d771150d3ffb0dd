-- call_ranges: the span of the memcpy API calls' correlation ids and their number (api_raw), from which
-- pipeline.py plans the ranges copies_join.sql runs on. No parameters.
SELECT min(correlation_id) AS lo, max(correlation_id) AS hi, count(*) AS n FROM api_raw;
