-- backlog: the stream backlog and the GPU idle time of each call in `probes` (backlog_probes.sql),
-- added to table `backlog`. Reads tables `work` (work.sql) and `busy_spans` (busy.sql). No parameters.
-- backlog_ns: a stream runs its work in order: the latest item started before this copy's GPU start
-- ends when the work queued ahead of it has drained; backlog_ns = that end - the call's start (0 when
-- the stream was idle).
-- gpu_idle_ns: the call's duration minus the time its device was busy during it (busy time up to an
-- instant: busy.sql).
-- queued_ahead: items (kernels, memsets, copies) its process had launched on the stream and that had not
-- started when the call began; queue_full (rules.sql) says when the call had to wait for a slot.
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
-- queued_ahead: the launches (one per correlationId: a graph launch is one, whatever kernels it holds) its process
-- made on the stream before the call (a lower correlationId) whose work had not
-- started when the call began (those items start inside the call's window, which work covers)
q AS (
    SELECT p.global_pid, p.correlation_id, count(DISTINCT w.correlation_id) AS queued_ahead
    FROM probes p JOIN work w
      ON w.device_id = p.device_id AND w.stream_id = p.stream_id AND w.global_pid = p.global_pid
     AND w.correlation_id < p.correlation_id AND w.start > p.api_start
    GROUP BY ALL
),
s AS (
    SELECT b.*, busy_to(b.api_start, x.start, x."end", x.prev_end, x.before_ns) AS busy_to_start
    FROM b ASOF LEFT JOIN busy_spans x ON x.device_id = b.device_id AND b.api_start >= x.start
),
e AS (
    SELECT s.*, busy_to(s.api_end, x.start, x."end", x.prev_end, x.before_ns) AS busy_to_end
    FROM s ASOF LEFT JOIN busy_spans x ON x.device_id = s.device_id AND s.api_end >= x.start
)
SELECT e.global_pid, e.correlation_id, e.backlog_ns,
       CASE WHEN e.device_id IS NOT NULL
            THEN greatest(e.api_end - e.api_start - (e.busy_to_end - e.busy_to_start), 0) END AS gpu_idle_ns,
       CASE WHEN e.device_id IS NOT NULL THEN COALESCE(q.queued_ahead, 0) END AS queued_ahead
FROM e LEFT JOIN q ON q.global_pid = e.global_pid AND q.correlation_id = e.correlation_id;
