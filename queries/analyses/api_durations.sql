-- api_durations: the table api-summary fills part by part (api_durations_part.sql, api_durations_rest.sql)
-- and summarizes (api_summary.sql): calls per function and host duration. No parameters.
--   name_id  the function (StringIds id); d  end - start in ns (NULL where a time is missing); n  calls
CREATE TEMP TABLE api_durations (name_id INTEGER, d BIGINT, n BIGINT);
