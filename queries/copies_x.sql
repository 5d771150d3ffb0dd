-- copies_x: copies plus their attribution (a table: every summary reads it) (call site, source class, fix), table `attrib` built by
-- analysis.py from the backtraces. `waited_for_gpu`: the call returned only after its GPU copy had
-- started, i.e. it waited for the stream (a long awaited_for_gpu call is host overhead, not a GPU wait).
CREATE TABLE copies_x AS
SELECT c.*, a.site, a.site_line, a.site_origin, a.source_class, a.evidence, a.fix,
       (c.api_end >= c.gpu_start OR (c.backlog_ns > 0 AND c.host_ns >= 0.5 * c.backlog_ns)) AS waited_for_gpu
FROM copies c
LEFT JOIN attrib a ON a.global_pid = c.global_pid AND a.correlation_id = c.correlation_id
WHERE c.host_ns IS NOT NULL AND c.host_ns >= 0;
