-- anomalies: rows that still allow an answer but must not vanish silently (key: a name for code, what:
-- the warning's words, n: how many). No parameters.
SELECT 'duplicates' AS key, 'memcpy activity rows duplicated exactly (counted once)' AS what,
       (SELECT memcpy_duplicates FROM copy_stats) AS n
UNION ALL
SELECT 'orphans', 'memcpy activity rows that no copy API call claims (their call is missing, unnamed in StringIds or not a copy API; not counted)',
       (SELECT COALESCE(sum(activity_without_call), 0) FROM orphan_stats)
UNION ALL
SELECT 'before_capture', 'memcpy activity rows issued before the capture began (their call precedes the trace; not counted)',
       (SELECT COALESCE(sum(before_capture), 0) FROM orphan_stats)
UNION ALL
SELECT 'shared_correlation', 'correlationIds shared by several memcpy API calls (a damaged export: one call kept per id)',
       (SELECT shared_correlation FROM copy_stats)
UNION ALL
SELECT 'disagreeing_rows', 'copy calls whose runtime and backtrace rows disagree on the duration by more than 50 us '
       || '(an edited export? judged by the CUDA runtime row)',
       (SELECT disagreeing_rows FROM copy_stats)
UNION ALL
SELECT 'bad_duration', 'copy calls with a NULL, negative or impossible (2^62 ns or more) host start/end (left out)',
       (SELECT count(*) FROM calls WHERE api_end IS NULL OR api_start IS NULL OR api_end < api_start)
UNION ALL
SELECT 'no_gpu_time', 'copy calls whose GPU activity has a NULL or impossible start/end (whether they waited for the '
       || 'GPU is unknown: counted, never as blocking)',
       (SELECT count(*) FROM calls WHERE api_end >= api_start AND (gpu_start IS NULL OR gpu_end IS NULL))
UNION ALL
SELECT 'unclassified', 'copy calls whose memory or copy kind cannot be decoded (ids CUPTI does not define, whatever '
       || 'the file''s ENUM tables call them; an Unknown copy kind whose memory kinds do not tell host from device; '
       || 'a Kineto copy name that does not parse)',
       (SELECT count(*) FROM calls_k c SEMI JOIN (SELECT * FROM kind_labels WHERE NOT classified) k
          ON k.kind_id = c.kind_id)
UNION ALL
SELECT 'no_activity', 'memcpy API calls with no memcpy activity row (not counted)',
       (SELECT api_rows_without_activity FROM copy_stats)
UNION ALL
-- nsys writes every range's start (NOT NULL): a NULL one here is a time the views read as missing. Ranges
-- without an end (never closed, and marks) are not counted.
SELECT 'bad_nvtx_time', 'NVTX ranges with an impossible start/end (2^62 ns or more, or ending before they start; left out)',
       (SELECT count(*) FROM n.nvtx WHERE start IS NULL OR "end" < start)
UNION ALL
SELECT 'long_names', 'NVTX range names longer than 1024 characters (cut)',
       (SELECT count(*) FROM nvtx_ranges WHERE name LIKE '%…' AND length(name) = 1024);
