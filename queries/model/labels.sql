-- labels: what copies_x joins to every call, once per distinct value, and `calls_k`: each call with
-- its kind id and Python call site id. No parameters.
-- kind_labels: each (copyKind, srcKind, dstKind) seen, with an id (kind_id: the only join on the three
-- columns is here), named through the file's own enums for display. What is judged comes from the ids as
-- CUPTI defines them (source/known_enums.sql), never from a label a file can change (issue 54):
--   classified   all three are ids CUPTI defines (an id it does not define is not decoded, whatever the
--                file's ENUM table calls it; a Kineto copy whose name does not parse has NULL ids), and
--                they tell which way the copy went: an Unknown copy kind needs memory kinds that tell
--                host from device on both sides (Unknown -> Unknown could be an H2D copy, never judged)
--   contradicts  the copy kind's host or device side disagrees with the memory kind of that side (a
--                Device-to-Device copy from Pageable memory): model/kind_checks.sql names it, the gate fails
--   direction    from the memory kinds where they tell host from device (Pageable/Pinned -> Device/Array
--                is H2D whatever the copy kind says, or a file could hide its pageable copies behind it);
--                else from the copy kind (Host-to-* is H2D, *-to-Host D2H, as nsys names them)
-- Sides by id: memory kinds 0 Pageable, 1 Pinned: host; 2 Device, 3 Array, 5 Device Static: device;
-- Managed and Unknown: neither. Copy kinds: HtoD 1, HtoA 3, HtoH 9, Unified HtoD 11 start on the host;
-- the others but Unknown (0) on the device; DtoH 2, AtoH 4, HtoH 9, Unified DtoH 12 end on the host.
CREATE TEMP TABLE kind_labels AS
WITH k AS (SELECT DISTINCT copy_kind, src_kind, dst_kind FROM calls),
s AS (
    SELECT k.*,
           CASE WHEN src_kind IN (0, 1) THEN 'host' WHEN src_kind IN (2, 3, 5) THEN 'device' END AS mem_src,
           CASE WHEN dst_kind IN (0, 1) THEN 'host' WHEN dst_kind IN (2, 3, 5) THEN 'device' END AS mem_dst,
           CASE WHEN copy_kind IN (1, 3, 9, 11) THEN 'host' WHEN copy_kind BETWEEN 2 AND 13 THEN 'device' END AS op_src,
           CASE WHEN copy_kind IN (2, 4, 9, 12) THEN 'host' WHEN copy_kind BETWEEN 1 AND 13 THEN 'device' END AS op_dst
    FROM k
),
l AS (
    SELECT (row_number() OVER (ORDER BY copy_kind, src_kind, dst_kind))::INTEGER AS kind_id,
           s.copy_kind, s.src_kind, s.dst_kind,
           COALESCE(sk.label, 'kind ' || COALESCE(s.src_kind::VARCHAR, 'unknown')) AS src_kind_name,
           COALESCE(dk.label, 'kind ' || COALESCE(s.dst_kind::VARCHAR, 'unknown')) AS dst_kind_name,
           ck.label AS copy_kind_name,
           COALESCE(s.copy_kind IN (SELECT id FROM known_copy_kind), false)
               AND COALESCE(s.src_kind IN (SELECT id FROM known_mem_kind), false)
               AND COALESCE(s.dst_kind IN (SELECT id FROM known_mem_kind), false)
               AND (s.op_src IS NOT NULL OR (s.mem_src IS NOT NULL AND s.mem_dst IS NOT NULL)) AS classified,
           COALESCE(s.op_src <> s.mem_src OR s.op_dst <> s.mem_dst, false) AS contradicts,
           CASE WHEN s.mem_src = 'host' AND s.mem_dst = 'device' THEN 'h2d'
                WHEN s.mem_src = 'device' AND s.mem_dst = 'host' THEN 'd2h'
                WHEN s.op_src = 'host' THEN 'h2d'
                WHEN s.op_dst = 'host' THEN 'd2h'
                ELSE 'other' END AS direction
    FROM s
    LEFT JOIN n.mem_kind_enum sk ON sk.id = s.src_kind
    LEFT JOIN n.mem_kind_enum dk ON dk.id = s.dst_kind
    LEFT JOIN n.copy_kind_enum ck ON ck.id = s.copy_kind
)
-- kind_g, src_g: one number per distinct (source, destination) name pair and source name (summary.sql)
SELECT *, dense_rank() OVER (ORDER BY src_kind_name, dst_kind_name)::INTEGER AS kind_g,
       dense_rank() OVER (ORDER BY src_kind_name)::INTEGER AS src_g
FROM l;

-- api: the name without the _vNNNN that nsys appends to runtime names (cudaMemcpyAsync_v3020); a driver
-- name's own _v2 stays. sync: a synchronous copy API (cudaMemcpy, cuMemcpyHtoD_v2): it returns only after
-- the copy, so it always waits for the GPU work queued ahead of it.
CREATE TEMP TABLE api_names AS
SELECT id, value, regexp_replace(value, '_v[0-9][0-9][0-9][0-9]+$', '') AS api, value NOT LIKE '%Async%' AS sync
FROM n.strings WHERE id IN (SELECT DISTINCT name_id FROM calls);

CREATE TEMP VIEW calls_k AS
SELECT c.*, k.kind_id, p.py_site_id
FROM calls c
JOIN kind_labels k
  ON k.copy_kind IS NOT DISTINCT FROM c.copy_kind AND k.src_kind IS NOT DISTINCT FROM c.src_kind
 AND k.dst_kind IS NOT DISTINCT FROM c.dst_kind
LEFT JOIN python_sites p ON p.global_pid = c.global_pid AND p.correlation_id = c.correlation_id
-- --steady-after (analyses/steady.py): the calls before the steady state are no copies of the report
WHERE getvariable('steady_from') IS NULL OR c.api_start >= getvariable('steady_from');
