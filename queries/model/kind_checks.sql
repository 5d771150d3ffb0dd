-- kind_checks: the copy calls whose kinds contradict each other (kind_labels.contradicts: the copy kind's host
-- or device side against that side's memory kind) or use an id CUPTI does not define that the file's own ENUM
-- table names, one row per (copyKind, srcKind, dstKind) with the ids, CUPTI's names and the file's, and how many
-- calls: what the gate's consistent-trace rule names (model/__init__.py). No parameters.
SELECT k.contradicts, k.copy_kind, k.src_kind, k.dst_kind,
       kc.label AS copy_known, ks.label AS src_known, kd.label AS dst_known,
       k.copy_kind_name, k.src_kind_name, k.dst_kind_name, count(*) AS calls
FROM calls_k c
JOIN kind_labels k ON k.kind_id = c.kind_id
LEFT JOIN known_copy_kind kc ON kc.id = k.copy_kind
LEFT JOIN known_mem_kind ks ON ks.id = k.src_kind
LEFT JOIN known_mem_kind kd ON kd.id = k.dst_kind
WHERE k.contradicts
   OR (kc.id IS NULL AND k.copy_kind_name IS NOT NULL)
   OR (ks.id IS NULL AND k.src_kind_name NOT LIKE 'kind %')
   OR (kd.id IS NULL AND k.dst_kind_name NOT LIKE 'kind %')
GROUP BY ALL
ORDER BY calls DESC, k.copy_kind, k.src_kind, k.dst_kind
LIMIT 20;
