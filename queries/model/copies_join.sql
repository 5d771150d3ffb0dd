-- copies_join: the memcpy API calls (api_raw, all parts in: store_calls.sql) joined to their GPU activity
-- (memcpy_raw) by (process, correlationId), into copies (store.sql), with their innermost enclosing NVTX
-- range (with_nvtx, nvtx.sql). Run once per range of correlation ids (pipeline.py, call_ranges.sql) and
-- compressed after each: all calls at once are wider than DuckDB's memory limit before compression, and
-- spilled (1x: 1.24 -> 0.88 s; 2x: 4.1 -> 2.4 s). A call and its activity share the id, so each range
-- joins apart. No parameters: the range of correlation ids is the variable call_range (call_range.sql).
-- Most calls have one runtime row and one activity row; copies_fold.sql folds the others.
-- The range's calls on their own: with_nvtx looks only at the NVTX events of their time span. Of an id with
-- several activity rows (memcpy_multi, store_memcpy.sql), at most two runtime rows per process: such a key is
-- folded from all its rows (copies_fold.sql) and its rows here only show it has several, while each of
-- thousands of runtime rows joined with each of as many activity rows grew with their square (12,000 sharing
-- one id in a crafted 1.4 MB file: minutes, 12 GB spilled). Numbering only those keys' rows costs nothing
-- when there are none (numbering every call doubled this step).
CREATE OR REPLACE TEMP VIEW api_calls AS
WITH r AS (
    SELECT global_tid, start AS api_start, "end" AS api_end, correlation_id, name_id, callchain_id FROM api_raw
    WHERE correlation_id BETWEEN getvariable('call_range')[1] AND getvariable('call_range')[2]
)
SELECT * FROM r ANTI JOIN memcpy_multi USING (correlation_id)
UNION ALL
SELECT * FROM (SELECT * FROM r SEMI JOIN memcpy_multi USING (correlation_id)
               QUALIFY row_number() OVER (PARTITION BY global_pid_of(global_tid), correlation_id) <= 2);

-- NVTX first, on the narrow calls: the ASOF join sorts what it carries.
INSERT INTO copies BY NAME
SELECT a.global_tid, global_pid_of(a.global_tid) AS global_pid, a.correlation_id,
       a.name_id, a.api_start, a.api_end, m.start AS gpu_start, m."end" AS gpu_end,
       m.bytes, m.copy_kind, m.src_kind, m.dst_kind, m.device_id, m.stream_id,
       1 AS activity_rows, 1 AS api_rows, a.callchain_id, a.nvtx_id, a.nvtx_g
FROM with_nvtx('api_calls') a
-- An activity row with a NULL globalPid (older exports) matches the call's process.
JOIN memcpy_raw m
  ON m.correlation_id = a.correlation_id
 AND (m.global_pid IS NULL OR m.global_pid = global_pid_of(a.global_tid))
WHERE m.correlation_id BETWEEN getvariable('call_range')[1] AND getvariable('call_range')[2];
