-- summary: figures per group of copy calls, for every grouping at once (one pass over the calls).
-- Parameters: $min_ns (a call is long when host_ns >= it), $direction ('h2d', 'd2h' or 'all'), $calls
-- (copy APIs: 'async', 'sync' or 'all'), $pattern (the step-range regular expression).
-- Column "by": 'kind' (source/destination memory-kind pair, labels from the file's
-- ENUM_CUDA_MEM_KIND), 'site' (call site signature), 'class' (true source class), 'nvtx' (innermost
-- enclosing NVTX range) or 'stream'.
-- long_calls, blocking_calls: the rules of model/rules.sql. gpu_idle_ns: GPU idle time during the
-- group's long calls (model/backlog.sql); NULL when it is not known for all of them (more long calls
-- than model/backlog_probes.sql probes). Groups are ranked by it (in 0.1 ms steps: below that it is
-- launch noise), then by host time in long calls.
-- *_in_steps: the same figures over the calls made during a step range (by_step.sql's rule): what
-- per-step figures are made of.
-- fix: the fix of the group's longest call. site_origins: where its call sites come from (python, native:
-- CUDA backtrace frames, none: no backtrace), comma-separated: a baseline matches sites only between
-- captures whose sites come from the same place.
WITH steps AS (
    SELECT global_pid_of(global_tid) AS global_pid, start, "end" FROM nvtx_ranges WHERE regexp_matches(name, $pattern)
),
x AS (
    SELECT * FROM copies_x WHERE selected(direction, sync, $direction, $calls)
),
in_step AS (   -- long calls only: the *_in_steps figures count no other
    SELECT DISTINCT x.global_pid, x.correlation_id
    FROM x JOIN steps s ON s.global_pid = x.global_pid AND x.api_start >= s.start AND x.api_end <= s."end"
    WHERE is_long(x.host_ns, $min_ns)
),
c AS (
    SELECT host_ns, gpu_idle_ns, device_id, waited_for_gpu, bytes,
           EXISTS (SELECT 1 FROM in_step i WHERE i.global_pid = x.global_pid AND i.correlation_id = x.correlation_id) AS in_step, fix, src_kind_name, dst_kind_name, source_class,
           COALESCE(site_origin, 'none') AS site_origin,
           COALESCE(site, '(no backtrace)') AS site_g,
           COALESCE(nvtx_range, '(no NVTX range)') AS nvtx_g,
           'stream ' || stream_id::VARCHAR AS stream_g
    FROM x
),
g AS (
    SELECT CASE WHEN grouping(src_kind_name) = 0 THEN 'kind' WHEN grouping(site_g) = 0 THEN 'site'
                WHEN grouping(source_class) = 0 THEN 'class' WHEN grouping(nvtx_g) = 0 THEN 'nvtx'
                ELSE 'stream' END AS "by",
           src_kind_name, dst_kind_name,
           COALESCE(src_kind_name || ' -> ' || dst_kind_name, site_g, source_class, nvtx_g, stream_g) AS "group",
           count(*) AS calls,
           count(*) FILTER (WHERE is_long(host_ns, $min_ns)) AS long_calls,
           count(*) FILTER (WHERE is_blocking(host_ns, $min_ns, waited_for_gpu)) AS blocking_calls,
           COALESCE(sum(host_ns) FILTER (WHERE is_long(host_ns, $min_ns)), 0)::BIGINT AS long_ns,
           COALESCE(sum(host_ns) FILTER (WHERE is_blocking(host_ns, $min_ns, waited_for_gpu)), 0)::BIGINT AS blocking_ns,
           CASE WHEN count(*) FILTER (WHERE is_long(host_ns, $min_ns) AND gpu_idle_ns IS NULL AND device_id IS NOT NULL) = 0
                THEN COALESCE(sum(gpu_idle_ns) FILTER (WHERE is_long(host_ns, $min_ns)), 0) END::BIGINT AS gpu_idle_ns,
           sum(host_ns)::BIGINT AS total_ns,
           quantile_disc(host_ns, [0.5, 0.99]) AS q,
           max(host_ns) AS max_ns,
           sum(bytes)::BIGINT AS bytes,
           COALESCE(sum(host_ns) FILTER (WHERE in_step AND is_long(host_ns, $min_ns)), 0)::BIGINT AS long_ns_in_steps,
           count(*) FILTER (WHERE in_step AND is_blocking(host_ns, $min_ns, waited_for_gpu)) AS blocking_calls_in_steps,
           COALESCE(sum(host_ns) FILTER (WHERE in_step AND is_blocking(host_ns, $min_ns, waited_for_gpu)), 0)::BIGINT
               AS blocking_ns_in_steps,
           CASE WHEN count(*) FILTER (WHERE is_long(host_ns, $min_ns) AND gpu_idle_ns IS NULL AND device_id IS NOT NULL) = 0
                THEN COALESCE(sum(gpu_idle_ns) FILTER (WHERE in_step AND is_long(host_ns, $min_ns)), 0) END::BIGINT
               AS gpu_idle_ns_in_steps,
           string_agg(DISTINCT src_kind_name, ',' ORDER BY src_kind_name) AS src_kinds,
           arg_max(fix, host_ns) AS fix,
           string_agg(DISTINCT site_origin, ',' ORDER BY site_origin) AS site_origins
    FROM c
    GROUP BY GROUPING SETS ((src_kind_name, dst_kind_name), (site_g), (source_class), (nvtx_g), (stream_g))
)
SELECT "by", CASE WHEN "by" = 'kind' THEN src_kind_name END AS src_kind,
       CASE WHEN "by" = 'kind' THEN dst_kind_name END AS dst_kind, "group",
       calls, long_calls, blocking_calls, long_ns, blocking_ns, gpu_idle_ns, total_ns,
       q[1] AS p50_ns, q[2] AS p99_ns, max_ns, bytes, long_ns_in_steps, blocking_calls_in_steps,
       blocking_ns_in_steps, gpu_idle_ns_in_steps, src_kinds, fix, site_origins
FROM g
ORDER BY "by", gpu_idle_ns // 100000 DESC, long_ns DESC, calls DESC, "group";
