-- api_durations_rest: the runtime rows whose nameId and duration do not pack into one integer
-- (source/sqlite_api_durations.sql gave NULL), read apart as api_part (name_id, start, end with the
-- normalized views' rules), counted into api_durations. No parameters.
INSERT INTO api_durations
SELECT name_id, "end" - start AS d, count(*) AS n FROM api_part GROUP BY ALL;
