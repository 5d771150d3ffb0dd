-- enum_contradictions: labels of the file's ENUM tables that contradict the ids CUPTI gives them (the
-- known_* tables of known_enums.sql: identical in every ENUM table of nsys 2022.4 .. 2026.1). The
-- figures are computed from the ids, the reports name kinds by the labels: a file that swaps them
-- (Pageable and Pinned, Host-to-Device and Device-to-Host) would have its pageable copies judged and
-- shown as pinned ones. Ids only one side knows are not contradictions. No parameters.
SELECT 'ENUM_CUDA_MEM_KIND' AS enum_table, f.id, f.label, k.label AS known
FROM n.mem_kind_enum f JOIN known_mem_kind k USING (id) WHERE f.label IS DISTINCT FROM k.label
UNION ALL
SELECT 'ENUM_CUDA_MEMCPY_OPER', f.id, f.label, k.label
FROM n.copy_kind_enum f JOIN known_copy_kind k USING (id) WHERE f.label IS DISTINCT FROM k.label
UNION ALL
SELECT 'ENUM_NSYS_EVENT_CLASS', f.id, f.label, k.label
FROM n.event_class_enum f JOIN known_event_class k USING (id) WHERE f.label IS DISTINCT FROM k.label
ORDER BY 1, 2;
