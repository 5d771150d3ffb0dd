-- copies: one row per asynchronous memcpy API call (cudaMemcpy*Async*, cuMemcpy*Async*) joined to
-- its GPU activity by (process, correlationId), built once per trace. No parameters.
-- Reads api_raw (the runtime rows of those calls, filtered inside SQLite by sqlite_copy_calls.sql:
-- an Arrow table from ingest.py) and the memcpy activity (n.memcpy, scanned once). Builds:
--   copies       narrow (ids and integers only: 2 M calls must fit in a few hundred MB); the labels,
--                NVTX names and attribution are joined in by the view copies_x. Most calls have one
--                runtime row and one activity row; analysis.py then runs copies_fold.sql for the
--                calls that have more (py_site_id is filled in by attribution.py).
--   copy_stats   counts anomalies.sql reports.
-- NVTX: the innermost enclosing range (with_nvtx, see nvtx.sql).

CREATE TEMP VIEW copy_calls AS
SELECT a.global_tid, (a.global_tid // 16777216) * 16777216 AS global_pid, a.correlation_id,
       a.name_id, a.start AS api_start, a."end" AS api_end, m.start AS gpu_start, m."end" AS gpu_end,
       m.bytes, m.copy_kind::INTEGER AS copy_kind, m.src_kind::INTEGER AS src_kind,
       m.dst_kind::INTEGER AS dst_kind, m.device_id::INTEGER AS device_id,
       m.stream_id::INTEGER AS stream_id, 1 AS activity_rows, 1 AS api_rows, a.callchain_id,
       NULL::INTEGER AS py_site_id
FROM api_raw a
-- An activity row with a NULL globalPid (older exports) matches the call's process.
JOIN n.memcpy m
  ON m.correlation_id = a.correlation_id
 AND (m.global_pid IS NULL OR m.global_pid = (a.global_tid // 16777216) * 16777216);

CREATE TEMP TABLE copies AS SELECT * FROM with_nvtx('copy_calls');
DROP VIEW copy_calls;

CREATE TEMP TABLE copy_keys_multi AS
SELECT global_pid, correlation_id FROM copies GROUP BY global_pid, correlation_id HAVING count(*) > 1;

CREATE TEMP TABLE copy_stats AS
SELECT (SELECT count(*) FROM api_raw) - (SELECT count(*) FROM copies) AS api_rows_without_activity,
       0::BIGINT AS memcpy_duplicates;
