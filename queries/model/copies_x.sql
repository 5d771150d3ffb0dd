-- copies_x: every copy call with its labels, NVTX range, attribution and backlog (a view over the
-- narrow `calls`: the strings live once in small tables, not once per call). No parameters.
-- calls_l: the same rows with their kind and API labels and backlog only (what selecting calls by direction
-- and API and judging them needs: summary.sql's in-step calls, by_step.sql, by_api.sql and
-- backlog_probes.sql read it instead of joining attribution and NVTX as copies_x does).
-- copies_g: copies_x without the NVTX range's name and path (what summary.sql reads): DuckDB keeps a
-- LEFT JOIN whose columns nobody reads, and joining every call with the ranges grew faster than the
-- trace (4x: ~1 s of summary.sql's 2.2 s).
-- group_key(by, ...): the label number a grouping of summary.sql groups on.
-- backlog_ns: GPU work queued ahead of the call on its stream (table `backlog`, computed by
-- backlog.sql only for the calls a report needs; NULL for the others). gpu_idle_ns: how long, during
-- the call, its device ran no kernel, memset or graph replay on any stream (backlog.sql; NULL likewise).
-- waited_for_gpu: the rule of rules.sql. *_g: numbers of the labels (what summary.sql groups on).
-- Filled on demand (model/pipeline.py, BACKLOG): backlog (backlog.sql), work and the windows it covers
-- (work.sql, probe_windows.sql). Empty until a report needs them.
CREATE TEMP TABLE backlog (global_pid BIGINT, correlation_id BIGINT, backlog_ns BIGINT, gpu_idle_ns BIGINT,
                           queued_ahead BIGINT);
CREATE TEMP TABLE work (device_id INTEGER, stream_id INTEGER, start BIGINT, "end" BIGINT, busy BOOLEAN,
                        correlation_id BIGINT, global_pid BIGINT, name_id BIGINT);
CREATE TEMP TABLE work_windows (lo BIGINT, hi BIGINT);
CREATE TEMP TABLE work_spans (lo BIGINT, hi BIGINT);

CREATE TEMP VIEW calls_l AS
SELECT c.*, c.api_end - c.api_start AS host_ns, s.value AS api_name, s.api, COALESCE(s.sync, false) AS sync,
       k.src_kind_name, k.dst_kind_name, k.copy_kind_name, k.direction, k.kind_g, k.src_g,
       b.backlog_ns, b.gpu_idle_ns, b.queued_ahead,
       waited_for_gpu(c.api_end, c.gpu_start, c.api_end - c.api_start, b.backlog_ns) AS waited_for_gpu
FROM calls_k c
LEFT JOIN api_names s ON s.id = c.name_id
JOIN kind_labels k ON k.kind_id = c.kind_id
LEFT JOIN backlog b ON b.global_pid = c.global_pid AND b.correlation_id = c.correlation_id
WHERE c.api_end >= c.api_start;

CREATE TEMP VIEW copies_g AS
SELECT c.global_pid, c.global_tid, c.correlation_id, c.name_id,
       c.api_start, c.api_end, c.host_ns,
       c.gpu_start, c.gpu_end, c.gpu_end - c.gpu_start AS gpu_ns, c.bytes,
       c.copy_kind, c.src_kind, c.dst_kind, c.device_id, c.stream_id, c.activity_rows, c.api_rows,
       c.callchain_id, c.nvtx_id, c.kind_id,
       c.api_name, c.api, c.sync,
       tid_of(c.global_tid) AS tid,
       pid_of(c.global_tid) AS pid,
       c.src_kind_name, c.dst_kind_name, c.copy_kind_name, c.direction,
       c.kind_g, c.src_g, COALESCE(a.site_g, 0) AS site_g, COALESCE(a.class_g, 0) AS class_g,
       COALESCE(a.fix_g, 0) AS fix_g, c.nvtx_g,
       c.backlog_ns, c.gpu_idle_ns, c.queued_ahead,
       c.gpu_start - c.api_start AS wait_ns,
       a.site, a.site_line, a.site_origin, a.source_class, a.evidence, a.fix, c.waited_for_gpu
FROM calls_l c
LEFT JOIN attrib a
  ON a.kind_id = c.kind_id AND a.callchain_id IS NOT DISTINCT FROM c.callchain_id
 AND a.py_site_id IS NOT DISTINCT FROM c.py_site_id;

-- copies_x: copies_g with the range's name and path in copies_g's place for them (the column order that
-- CopyModel.copies() hands out).
CREATE TEMP VIEW copies_x AS
SELECT g.* EXCLUDE (site, site_line, site_origin, source_class, evidence, fix, waited_for_gpu),
       t.name AS nvtx_range, t.path AS nvtx_path,
       g.site, g.site_line, g.site_origin, g.source_class, g.evidence, g.fix, g.waited_for_gpu
FROM copies_g g
LEFT JOIN nvtx_tree t ON t.id = g.nvtx_id;

CREATE TEMP MACRO group_key("by", kind_g, site_g, class_g, nvtx_g, stream_id) AS
CASE "by" WHEN 'kind' THEN kind_g WHEN 'site' THEN site_g WHEN 'class' THEN class_g WHEN 'nvtx' THEN nvtx_g
          ELSE stream_id END;
