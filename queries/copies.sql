-- copies: one row per asynchronous memcpy API call (cudaMemcpy*Async*, cuMemcpy*Async*) joined to
-- its GPU activity by (process, correlationId). Builds table `copies` (and temp tables api_rows,
-- memcpy_rows, work, reused by anomalies.sql). No parameters.
-- Columns: host_ns (what blocked the calling thread), gpu_ns, bytes, kinds decoded through the
-- file's own enums, stream, thread, innermost enclosing NVTX range and the whole NVTX path,
-- stream backlog at the call (when the GPU work queued ahead of it drained), wait_ns
-- (call start -> its GPU copy start).
-- Extra rows added by capture options (CUDA backtrace rows share the runtime row's correlationId)
-- are folded into one call; exact duplicate activity rows count once (anomalies.sql counts them).
-- The device-wide backlog is computed only for the calls listed (top.sql): it needs a running max
-- over all of the device's work.
-- Each source table is scanned once: the SQLite file may be gigabytes.

CREATE TEMP TABLE api_rows AS
SELECT r.start, r."end", r.global_tid, r.correlation_id, r.callchain_id, r.event_class, r.name_id,
       (r.global_tid // 16777216) * 16777216 AS global_pid
FROM n.runtime r
WHERE r.name_id IN (SELECT id FROM n.strings WHERE value LIKE 'cu%Memcpy%Async%')
  AND r.correlation_id IS NOT NULL;

CREATE TEMP TABLE memcpy_rows AS SELECT DISTINCT * FROM n.memcpy;
CREATE TEMP TABLE memcpy_total AS SELECT count(*) AS n FROM n.memcpy;

-- Everything that occupies a stream, slim: kernels, copies, memsets.
CREATE TEMP TABLE work AS
SELECT device_id, stream_id, start, "end" FROM n.kernel
UNION ALL SELECT device_id, stream_id, start, "end" FROM memcpy_rows
UNION ALL SELECT device_id, stream_id, start, "end" FROM n.memset;

CREATE TABLE copies AS
WITH api AS (
    SELECT *,
           max(callchain_id) OVER w AS any_callchain,
           count(*) OVER w AS api_rows,
           row_number() OVER (PARTITION BY global_pid, correlation_id
                              ORDER BY (event_class = (SELECT id FROM n.runtime_class)) IS TRUE DESC,
                                       ("end" - start) NULLS LAST) AS rn
    FROM api_rows
    WINDOW w AS (PARTITION BY global_pid, correlation_id)
    QUALIFY rn = 1
),
joined AS (
    -- Activity rows join their API call (a NULL globalPid matches the call's process), then fold
    -- into one row per call: several rows of one call add up, exact duplicates count once.
    SELECT a.global_pid, any_value(a.global_tid) AS global_tid, a.correlation_id,
           any_value(a.name_id) AS name_id, any_value(a.start) AS api_start, any_value(a."end") AS api_end,
           any_value(a."end" - a.start) AS host_ns,
           min(m.start) AS gpu_start, max(m."end") AS gpu_end, max(m."end") - min(m.start) AS gpu_ns,
           sum(m.bytes)::BIGINT AS bytes,
           any_value(m.copy_kind) AS copy_kind, any_value(m.src_kind) AS src_kind,
           any_value(m.dst_kind) AS dst_kind, any_value(m.device_id) AS device_id,
           any_value(m.stream_id) AS stream_id, count(*) AS activity_rows,
           any_value(a.api_rows) AS api_rows,
           any_value(COALESCE(a.callchain_id, a.any_callchain)) AS callchain_id
    FROM api a
    JOIN memcpy_rows m
      ON m.correlation_id = a.correlation_id AND COALESCE(m.global_pid, a.global_pid) = a.global_pid
    GROUP BY a.global_pid, a.correlation_id
),
nv AS (
    -- Innermost enclosing NVTX range: push/pop ranges nest, so the range open at the call is the
    -- latest one started at the call's nesting depth (see nvtx.sql); two ASOF joins, no range join.
    SELECT j.global_pid, j.correlation_id, r.name AS nvtx_range, r.path AS nvtx_path
    FROM joined j
    ASOF JOIN nvtx_depth d ON d.global_tid = j.global_tid AND j.api_start >= d.t
    ASOF JOIN nvtx_tree r ON r.global_tid = j.global_tid AND r.depth = d.depth AND j.api_start >= r.start
    WHERE d.depth > 0 AND r."end" >= j.api_end
),
with_backlog AS (
    -- A stream runs its work in order: the latest item started before this copy ends when the work
    -- queued ahead of it has drained.
    SELECT j.*, w."end" AS stream_drained_at
    FROM joined j
    ASOF LEFT JOIN work w ON w.device_id = j.device_id AND w.stream_id = j.stream_id AND j.gpu_start > w.start
)
SELECT w.*,
       s.value AS api_name,
       (w.global_tid % 16777216) AS tid,
       ((w.global_tid // 16777216) % 16777216) AS pid,
       COALESCE(sk.label, 'kind ' || w.src_kind::VARCHAR) AS src_kind_name,
       COALESCE(dk.label, 'kind ' || w.dst_kind::VARCHAR) AS dst_kind_name,
       ck.label AS copy_kind_name,
       CASE WHEN ck.label LIKE 'Host-to-%' OR ck.label LIKE '%Host-to-Device' THEN 'h2d'
            WHEN ck.label LIKE '%-to-Host' THEN 'd2h'
            WHEN ck.label IS NULL AND sk.label IN ('Pageable', 'Pinned') AND dk.label = 'Device' THEN 'h2d'
            WHEN ck.label IS NULL AND dk.label IN ('Pageable', 'Pinned') AND sk.label = 'Device' THEN 'd2h'
            ELSE 'other' END AS direction,
       greatest(COALESCE(w.stream_drained_at, w.api_start) - w.api_start, 0) AS backlog_ns,
       w.gpu_start - w.api_start AS wait_ns,
       nv.nvtx_range, nv.nvtx_path
FROM with_backlog w
LEFT JOIN n.strings s ON s.id = w.name_id
LEFT JOIN n.mem_kind_enum sk ON sk.id = w.src_kind
LEFT JOIN n.mem_kind_enum dk ON dk.id = w.dst_kind
LEFT JOIN n.copy_kind_enum ck ON ck.id = w.copy_kind
LEFT JOIN nv ON nv.global_pid = w.global_pid AND nv.correlation_id = w.correlation_id;
