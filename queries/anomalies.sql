-- anomalies: rows that still allow an answer but must not vanish silently. No parameters.
SELECT 'memcpy activity rows duplicated exactly (counted once)' AS what,
       (SELECT n FROM memcpy_total) - (SELECT count(*) FROM memcpy_rows) AS n
UNION ALL
SELECT 'copy calls with a NULL or negative host duration (left out)',
       (SELECT count(*) FROM copies WHERE host_ns IS NULL OR host_ns < 0)
UNION ALL
SELECT 'copy calls whose memory kind is not in ENUM_CUDA_MEM_KIND',
       (SELECT count(*) FROM copies WHERE src_kind_name LIKE 'kind %' OR dst_kind_name LIKE 'kind %')
UNION ALL
SELECT 'async memcpy API calls with no memcpy activity row (not counted)',
       (SELECT count(*) FROM (SELECT DISTINCT global_pid, correlation_id FROM api_rows) a
        WHERE NOT EXISTS (SELECT 1 FROM copies c
                          WHERE c.correlation_id = a.correlation_id AND c.global_pid = a.global_pid))
UNION ALL
SELECT 'NVTX range names longer than 1024 characters (cut)',
       (SELECT count(*) FROM n.nvtx_ranges WHERE name LIKE '%…' AND length(name) = 1024);
