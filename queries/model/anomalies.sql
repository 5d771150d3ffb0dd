-- anomalies: rows that still allow an answer but must not vanish silently. No parameters.
SELECT 'memcpy activity rows duplicated exactly (counted once)' AS what,
       (SELECT memcpy_duplicates FROM copy_stats) AS n
UNION ALL
SELECT 'copy calls with a NULL or negative host duration (left out)',
       (SELECT count(*) FROM calls WHERE api_end IS NULL OR api_start IS NULL OR api_end < api_start)
UNION ALL
SELECT 'copy calls whose memory kind is not in ENUM_CUDA_MEM_KIND',
       (SELECT count(*) FROM calls_k c
        SEMI JOIN (SELECT * FROM kind_labels WHERE src_kind_name LIKE 'kind %' OR dst_kind_name LIKE 'kind %') k
          ON k.kind_id = c.kind_id)
UNION ALL
SELECT 'async memcpy API calls with no memcpy activity row (not counted)',
       (SELECT api_rows_without_activity FROM copy_stats)
UNION ALL
SELECT 'NVTX range names longer than 1024 characters (cut)',
       (SELECT count(*) FROM nvtx_ranges WHERE name LIKE '%…' AND length(name) = 1024);
