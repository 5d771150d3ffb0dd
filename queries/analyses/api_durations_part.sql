-- api_durations_part: one part of the runtime table as it arrives (api_part: k, the packed nameId and
-- duration of source/sqlite_api_durations.sql), counted per function and duration into api_durations, so
-- that memory holds distinct durations, not calls. The rows that do not pack (k NULL) are read apart
-- (api_durations_rest.sql). No parameters.
INSERT INTO api_durations
SELECT (k >> 40)::INTEGER AS name_id, k & 1099511627775 AS d, count(*) AS n
FROM api_part WHERE k IS NOT NULL GROUP BY k;
