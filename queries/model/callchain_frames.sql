-- callchain_frames: the native stack (n.callchains) of every copy call that has one, innermost frame first:
-- what Trace.native_stacks reads for a Kineto trace (an nsys export's is filtered inside SQLite). No parameters.
SELECT c.id AS callchain_id, c.depth, sy.value AS symbol, mo.value AS module
FROM n.callchains c
LEFT JOIN n.strings sy ON sy.id = c.symbol
LEFT JOIN n.strings mo ON mo.id = c.module
WHERE c.id IN (SELECT DISTINCT callchain_id FROM calls WHERE callchain_id IS NOT NULL)
ORDER BY c.id, c.depth;
