-- busy: how long each device was busy up to any instant inside the probed calls (table `probes`), as one
-- row per busy item of table `work` (work.sql) in table busy_spans, sorted by start per device in one pass. Busy = any kernel,
-- memset or CUDA graph replay running on any of the device's streams; copies are not (the copy engine moves
-- data while the SMs may idle). No parameters.
-- Per item: prev_end = the latest end of the items started before it (NULL: none), before_ns = the busy
-- time up to prev_end (the union of those items). The busy time up to an instant t, with the last item
-- starting at or before t (an as-of look-up, backlog.sql):
--   before_ns - max(prev_end - t, 0) + max(min(t, end) - max(start, prev_end), 0)
-- (the earlier items are busy up to prev_end, contiguously back to at least this item's start; this item
-- adds what it covers beyond prev_end).
-- Only the items overlapping some probed call (table `probes`) are kept: the busy time within a call
-- depends on those alone, and the calls are short next to the backlog windows `work` covers.
CREATE OR REPLACE TEMP TABLE busy_spans AS
WITH c AS (
    SELECT api_start AS lo, api_end AS hi,
           max(api_end) OVER (ORDER BY api_start, api_end ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_hi
    FROM probes WHERE device_id IS NOT NULL
),
calls AS (   -- the probed calls' windows, merged where they overlap (disjoint, sorted)
    SELECT min(lo) AS lo, max(hi) AS hi
    FROM (SELECT lo, hi, sum(CASE WHEN prev_hi IS NULL OR lo > prev_hi THEN 1 ELSE 0 END)
                             OVER (ORDER BY lo, hi ROWS UNBOUNDED PRECEDING) AS grp FROM c)
    GROUP BY grp
),
near AS (    -- the last merged window starting before the item ends is the only one it can overlap
    SELECT k.device_id, k.start, k."end"
    FROM (SELECT * FROM work WHERE busy AND "end" > start) k
    ASOF JOIN calls s ON k."end" >= s.lo
    WHERE k.start < s.hi
),
w AS (
    SELECT device_id, start, "end",
           max("end") OVER p AS prev_end
    FROM near
    WINDOW p AS (PARTITION BY device_id ORDER BY start, "end" ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
)
SELECT device_id, start, "end", prev_end,
       COALESCE(sum(greatest("end" - greatest(start, COALESCE(prev_end, start)), 0)) OVER p, 0)::BIGINT AS before_ns
FROM w
WINDOW p AS (PARTITION BY device_id ORDER BY start, "end" ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING);
