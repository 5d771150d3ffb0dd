-- views_gpu_work: the kernels and memsets, read from the views n.* (a format that fills them itself: Kineto), that
-- overlap a span the backlogs need
-- (work_spans: lo, hi), as model/work.sql reads gpu_work (what pipeline.read_gpu_work reads from an nsys
-- export inside SQLite). No parameters.
SELECT DISTINCT w.device_id, w.stream_id, w.start, w."end", w.correlation_id, w.global_pid, w.name_id
FROM (SELECT device_id, stream_id, start, "end", correlation_id, global_pid, name_id FROM n.kernel
      UNION ALL SELECT device_id, stream_id, start, "end", correlation_id, global_pid, name_id FROM n.memset) w
JOIN work_spans s ON w."end" >= s.lo AND w.start < s.hi;
