-- labels: what copies_x joins to every call, once per distinct value, and `calls_k`: each call with
-- its kind id and Python call site id. No parameters.
-- kind_labels: each (copyKind, srcKind, dstKind) seen, with an id (kind_id: the only join on the three
-- columns is here), named through the file's own enums, with its direction (from the copy kind; where that
-- is missing or Unknown, from the source and destination kinds: a copy from Pageable to Device is H2D
-- whatever the copy kind says, or a file could hide its pageable copies behind copyKind 0). api_names: the API names
-- of the copy calls. python_sites comes from the Python-backtrace step (attribution.py).
CREATE TEMP TABLE kind_labels AS
WITH k AS (SELECT DISTINCT copy_kind, src_kind, dst_kind FROM calls),
l AS (
    SELECT (row_number() OVER (ORDER BY copy_kind, src_kind, dst_kind))::INTEGER AS kind_id, k.*,
           COALESCE(sk.label, 'kind ' || k.src_kind::VARCHAR) AS src_kind_name,
           COALESCE(dk.label, 'kind ' || k.dst_kind::VARCHAR) AS dst_kind_name,
           ck.label AS copy_kind_name,
           CASE WHEN ck.label LIKE 'Host-to-%' OR ck.label LIKE '%Host-to-Device' THEN 'h2d'
                WHEN ck.label LIKE '%-to-Host' THEN 'd2h'
                WHEN COALESCE(ck.label, 'Unknown') = 'Unknown' AND sk.label IN ('Pageable', 'Pinned')
                     AND dk.label = 'Device' THEN 'h2d'
                WHEN COALESCE(ck.label, 'Unknown') = 'Unknown' AND dk.label IN ('Pageable', 'Pinned')
                     AND sk.label = 'Device' THEN 'd2h'
                ELSE 'other' END AS direction
    FROM k
    LEFT JOIN n.mem_kind_enum sk ON sk.id = k.src_kind
    LEFT JOIN n.mem_kind_enum dk ON dk.id = k.dst_kind
    LEFT JOIN n.copy_kind_enum ck ON ck.id = k.copy_kind
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
