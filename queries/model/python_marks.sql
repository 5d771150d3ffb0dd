-- python_marks: the Python backtrace mark (--python-backtrace=cuda) of each copy call. nsys stores a
-- backtrace as an NVTX mark in the domain 'Python Backtrace on CUDA' just before the API call, on the
-- same thread, with the frames in an extended binary payload (exported only with
-- 'nsys export --include-blobs=true'; trace.py reads the payloads). Each copy takes the latest such
-- mark at most $window_ns before its start. Returns the mark's (global_tid, start, domain_id).
-- Only the calls in a window-sized time bucket of a mark or the one after it (near) can have one: a hash
-- join that lets the ASOF join sort those alone, not every call (2x: 0.49 -> 0.07 s with few marks; a
-- trace with a mark per call keeps them all). Integer division truncates toward zero, which keeps that
-- true for negative times too.
WITH nv AS MATERIALIZED (  -- one scan of NVTX_EVENTS: the marks, and the rows that name the domain
    SELECT global_tid, start, "end", domain_id,
           text = 'Python Backtrace on CUDA'
           OR text_id IN (SELECT id FROM n.strings WHERE value = 'Python Backtrace on CUDA') AS names_domain
    FROM n.nvtx
    WHERE domain_id IS NOT NULL
),
domains AS (
    SELECT DISTINCT domain_id FROM nv WHERE names_domain
),
marks AS MATERIALIZED (
    SELECT global_tid, start, domain_id FROM nv
    WHERE "end" IS NULL AND domain_id IN (SELECT domain_id FROM domains)
),
buckets AS (
    SELECT DISTINCT global_tid, start // $window_ns + k AS b FROM marks, (VALUES (0), (1)) u(k)
),
near AS (
    SELECT c.global_pid, c.correlation_id, c.global_tid, c.api_start FROM calls c
    SEMI JOIN buckets b ON b.global_tid = c.global_tid AND b.b = c.api_start // $window_ns
)
SELECT c.global_pid, c.correlation_id, m.global_tid, m.start, m.domain_id
FROM near c
ASOF JOIN marks m ON m.global_tid = c.global_tid AND c.api_start >= m.start
WHERE c.api_start - m.start <= $window_ns;
