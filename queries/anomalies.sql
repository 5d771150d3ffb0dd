-- anomalies: rows that still allow an answer but must not vanish silently. No parameters.
SELECT 'memcpy activity rows duplicated exactly (counted once)' AS what,
       (SELECT count(*) - count(DISTINCT (start, "end", device_id, stream_id, correlation_id, global_pid,
                                            bytes, copy_kind, src_kind, dst_kind)) FROM n.memcpy) AS n
UNION ALL
SELECT 'copy calls with a NULL or negative host duration (left out)',
       (SELECT count(*) FROM copies WHERE host_ns IS NULL OR host_ns < 0)
UNION ALL
SELECT 'copy calls whose memory kind is not in ENUM_CUDA_MEM_KIND',
       (SELECT count(*) FROM copies WHERE src_kind_name LIKE 'kind %' OR dst_kind_name LIKE 'kind %')
UNION ALL
SELECT 'async memcpy API calls with no memcpy activity row (not counted)',
       (SELECT count(*) FROM (
            SELECT DISTINCT (r.global_tid // 16777216) AS p, r.correlation_id
            FROM n.runtime r JOIN n.strings s ON s.id = r.name_id
            WHERE s.value LIKE 'cu%Memcpy%Async%') a
        WHERE NOT EXISTS (SELECT 1 FROM copies c
                          WHERE c.correlation_id = a.correlation_id AND c.global_pid // 16777216 = a.p))
UNION ALL
SELECT 'NVTX range names longer than 1024 characters (cut)',
       (SELECT count(*) FROM n.nvtx_ranges WHERE name LIKE '%…' AND length(name) = 1024);
