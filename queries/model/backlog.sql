-- backlog: the stream backlog of each call in `probes` (backlog_probes.sql), added to table `backlog`.
-- A stream runs its work in order: the latest item started before this copy's GPU start ends when
-- the work queued ahead of it has drained; backlog_ns = that end - the call's start (0 when the
-- stream was idle). Reads table `work` (work.sql). No parameters.
INSERT INTO backlog
SELECT p.global_pid, p.correlation_id, greatest(COALESCE(w."end", p.api_start) - p.api_start, 0) AS backlog_ns
FROM probes p
ASOF LEFT JOIN work w ON w.device_id = p.device_id AND w.stream_id = p.stream_id AND p.gpu_start > w.start;
