-- backlog: the stream backlog and the GPU idle time of each call in `probes` (backlog_probes.sql),
-- added to table `backlog`. Reads tables `work` (work.sql) and `busy_spans` (busy.sql). No parameters.
-- backlog_ns: a stream runs its work in order: the latest item started before this copy's GPU start
-- ends when the work queued ahead of it has drained; backlog_ns = that end - the call's start (0 when
-- the stream was idle).
-- gpu_idle_ns: the call's duration minus the time its device was busy during it (busy time up to an
-- instant: busy.sql).
-- NULL for a call without a GPU copy (no device).
CREATE OR REPLACE TEMP MACRO busy_to(t, start, "end", prev_end, before_ns) AS
    COALESCE(before_ns - greatest(COALESCE(prev_end, start) - t, 0)
             + greatest(least(t, "end") - greatest(start, COALESCE(prev_end, start)), 0), 0);

INSERT INTO backlog
WITH b AS (
    SELECT p.*, greatest(COALESCE(w."end", p.api_start) - p.api_start, 0) AS backlog_ns
    FROM probes p
    ASOF LEFT JOIN work w ON w.device_id = p.device_id AND w.stream_id = p.stream_id AND p.gpu_start > w.start
),
s AS (
    SELECT b.*, busy_to(b.api_start, x.start, x."end", x.prev_end, x.before_ns) AS busy_to_start
    FROM b ASOF LEFT JOIN busy_spans x ON x.device_id = b.device_id AND b.api_start >= x.start
),
e AS (
    SELECT s.*, busy_to(s.api_end, x.start, x."end", x.prev_end, x.before_ns) AS busy_to_end
    FROM s ASOF LEFT JOIN busy_spans x ON x.device_id = s.device_id AND s.api_end >= x.start
)
SELECT global_pid, correlation_id, backlog_ns,
       CASE WHEN device_id IS NOT NULL
            THEN greatest(api_end - api_start - (busy_to_end - busy_to_start), 0) END AS gpu_idle_ns
FROM e;
