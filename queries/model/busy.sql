-- busy: how long each device was busy up to any instant inside the spans of table `work` (work.sql), as one
-- row per busy item (table busy_spans), sorted by start per device in a single pass. Busy = any kernel,
-- memset or CUDA graph replay running on any of the device's streams; copies are not (the copy engine moves
-- data while the SMs may idle). No parameters.
-- Per item: prev_end = the latest end of the items started before it (NULL: none), before_ns = the busy
-- time up to prev_end (the union of those items). The busy time up to an instant t, with the last item
-- starting at or before t (an as-of look-up, backlog.sql):
--   before_ns - max(prev_end - t, 0) + max(min(t, end) - max(start, prev_end), 0)
-- (the earlier items are busy up to prev_end, contiguously back to at least this item's start; this item
-- adds what it covers beyond prev_end).
CREATE OR REPLACE TEMP TABLE busy_spans AS
WITH w AS (
    SELECT device_id, start, "end",
           max("end") OVER p AS prev_end
    FROM work WHERE busy AND "end" > start
    WINDOW p AS (PARTITION BY device_id ORDER BY start, "end" ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
)
SELECT device_id, start, "end", prev_end,
       COALESCE(sum(greatest("end" - greatest(start, COALESCE(prev_end, start)), 0)) OVER p, 0)::BIGINT AS before_ns
FROM w
WINDOW p AS (PARTITION BY device_id ORDER BY start, "end" ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING);
