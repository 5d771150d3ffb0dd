-- callchain_frames: the native stack (CUDA_CALLCHAINS, recorded with --cudabacktrace) of every
-- copy call that has one, innermost frame first. No parameters.
SELECT c.id AS callchain_id, c.depth, sy.value AS symbol, mo.value AS module
FROM n.callchains c
LEFT JOIN n.strings sy ON sy.id = c.symbol
LEFT JOIN n.strings mo ON mo.id = c.module
WHERE c.id IN (SELECT DISTINCT callchain_id FROM calls WHERE callchain_id IS NOT NULL)
ORDER BY c.id, c.depth;
