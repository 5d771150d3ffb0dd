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
-- Narrow on purpose: the per-call rows carry integer ids of their labels only (a label is one of a few
-- distinct values, but a string per call is ~200 bytes: 2 M calls would not fit DuckDB's memory
-- limit), and the labels join onto the few result rows.
-- Two passes over copies_g (each a join of every call to its labels, attribution and backlog): fine, which
-- also counts the calls per duration bucket (the percentiles' histogram), and the calls of the few buckets
-- that hold a percentile. in_step reads the narrow calls_l (2x: 2.1-2.4 -> 1.75 s; four passes before), its
-- steps found by with_step (nvtx.sql).
WITH
-- Not materialized: DuckDB would otherwise hold all of x (read twice below) at once.
x AS NOT MATERIALIZED (
    SELECT global_pid, correlation_id, api_start, api_end, host_ns, gpu_idle_ns, device_id, waited_for_gpu, bytes,
           kind_g, src_g, site_g, class_g, fix_g, nvtx_g, stream_id,
           CASE site_origin WHEN 'native' THEN 1 WHEN 'python' THEN 2 ELSE 4 END AS origin_bit
    FROM copies_g WHERE selected(direction, sync, $direction, $calls)
),
long_calls AS (   -- long calls only: the *_in_steps figures count no other
    -- From calls_l, not x: only the joins its filter needs (the rows of copies_x exactly).
    SELECT global_pid, correlation_id, api_start, api_end FROM calls_l
    WHERE selected(direction, sync, $direction, $calls) AND is_long(host_ns, $min_ns)
),
in_step AS MATERIALIZED (
    SELECT global_pid, correlation_id FROM with_step('long_calls', $pattern) WHERE step IS NOT NULL
),
c AS (
    SELECT x.*, i.correlation_id IS NOT NULL AS in_step
    FROM x
    -- A join, not EXISTS: each FILTER that reads in_step would repeat the subquery.
    LEFT JOIN in_step i ON i.global_pid = x.global_pid AND i.correlation_id = x.correlation_id
),
-- Additive figures per combination of labels first (few rows), then per grouping from those.
fine AS MATERIALIZED (
    SELECT kind_g, src_g, site_g, class_g, nvtx_g, stream_id, origin_bit, host_ns >> 16 AS b,
           count(*) AS calls,
           count(*) FILTER (WHERE is_long(host_ns, $min_ns)) AS long_calls,
           count(*) FILTER (WHERE is_blocking(host_ns, $min_ns, waited_for_gpu)) AS blocking_calls,
           sum(host_ns) FILTER (WHERE is_long(host_ns, $min_ns)) AS long_ns,
           sum(host_ns) FILTER (WHERE is_blocking(host_ns, $min_ns, waited_for_gpu)) AS blocking_ns,
           count(*) FILTER (WHERE is_long(host_ns, $min_ns) AND gpu_idle_ns IS NULL AND device_id IS NOT NULL) AS idle_unknown,
           sum(gpu_idle_ns) FILTER (WHERE is_long(host_ns, $min_ns)) AS gpu_idle_ns,
           sum(host_ns) AS total_ns,
           max(host_ns) AS max_ns,
           -- the longest call's fix; among equally long calls, the last fix by name: every run picks the same
           max(struct_pack(ns := host_ns, fix := fix_g)) AS longest,
           sum(bytes) AS bytes,
           sum(host_ns) FILTER (WHERE in_step AND is_long(host_ns, $min_ns)) AS long_ns_in_steps,
           count(*) FILTER (WHERE in_step AND is_blocking(host_ns, $min_ns, waited_for_gpu)) AS blocking_calls_in_steps,
           sum(host_ns) FILTER (WHERE in_step AND is_blocking(host_ns, $min_ns, waited_for_gpu)) AS blocking_ns_in_steps,
           sum(gpu_idle_ns) FILTER (WHERE in_step AND is_long(host_ns, $min_ns)) AS gpu_idle_ns_in_steps
    FROM c
    GROUP BY ALL
),
g AS MATERIALIZED (
    SELECT CASE WHEN grouping(kind_g) = 0 THEN 'kind' WHEN grouping(site_g) = 0 THEN 'site'
                WHEN grouping(class_g) = 0 THEN 'class' WHEN grouping(nvtx_g) = 0 THEN 'nvtx'
                ELSE 'stream' END AS "by",
           COALESCE(kind_g, site_g, class_g, nvtx_g, stream_id) AS key,
           kind_g, site_g, class_g, nvtx_g, stream_id,
           sum(calls)::BIGINT AS calls,
           sum(long_calls)::BIGINT AS long_calls,
           sum(blocking_calls)::BIGINT AS blocking_calls,
           COALESCE(sum(long_ns), 0)::BIGINT AS long_ns,
           COALESCE(sum(blocking_ns), 0)::BIGINT AS blocking_ns,
           CASE WHEN sum(idle_unknown) = 0 THEN COALESCE(sum(gpu_idle_ns), 0) END::BIGINT AS gpu_idle_ns,
           sum(total_ns)::BIGINT AS total_ns,
           max(max_ns) AS max_ns,
           sum(bytes)::BIGINT AS bytes,
           COALESCE(sum(long_ns_in_steps), 0)::BIGINT AS long_ns_in_steps,
           sum(blocking_calls_in_steps)::BIGINT AS blocking_calls_in_steps,
           COALESCE(sum(blocking_ns_in_steps), 0)::BIGINT AS blocking_ns_in_steps,
           CASE WHEN sum(idle_unknown) = 0 THEN COALESCE(sum(gpu_idle_ns_in_steps), 0) END::BIGINT AS gpu_idle_ns_in_steps,
           list(DISTINCT src_g) AS src_gs,
           max(longest).fix AS fix_g,
           bit_or(origin_bit) AS origin_bits
    FROM fine
    GROUP BY GROUPING SETS ((kind_g), (site_g), (class_g), (nvtx_g), (stream_id))
),
-- Percentiles, exactly as quantile_disc (the smallest value whose cumulative share reaches q: rank
-- ceil(n * q)), without holding every call's value at once (a DuckDB quantile keeps them all in memory:
-- 2 M calls in five groupings do not fit): count the calls of each group per 65 us bucket, find the
-- bucket that holds each rank, then count the distinct values of those buckets only.
groupings AS (SELECT * FROM (VALUES ('kind'), ('site'), ('class'), ('nvtx'), ('stream')) u("by")),
hist AS MATERIALIZED (
    SELECT u."by", group_key(u."by", kind_g, site_g, class_g, nvtx_g, stream_id) AS key,
           b, sum(calls)::BIGINT AS n
    FROM fine CROSS JOIN groupings u
    WHERE b IS NOT NULL
    GROUP BY ALL
),
cum AS (
    SELECT *, sum(n) OVER (PARTITION BY "by", key ORDER BY b ROWS UNBOUNDED PRECEDING) AS upto,
           sum(n) OVER (PARTITION BY "by", key) AS total
    FROM hist
),
want AS (
    SELECT c."by", c.key, p.i, c.b, greatest(1, ceil(c.total * p.q)) - (c.upto - c.n) AS r
    FROM cum c JOIN (VALUES (1, 0.5), (2, 0.99)) p(i, q)
      ON greatest(1, ceil(c.total * p.q)) > c.upto - c.n AND greatest(1, ceil(c.total * p.q)) <= c.upto
),
-- The label combinations (fine's rows) whose bucket some grouping wants: x is read once more, for their
-- calls only.
wanted AS MATERIALIZED (
    SELECT DISTINCT f.kind_g, f.site_g, f.class_g, f.nvtx_g, f.stream_id, f.b
    FROM fine f JOIN want w
      ON w.b = f.b
     AND w.key IS NOT DISTINCT FROM group_key(w."by", f.kind_g, f.site_g, f.class_g, f.nvtx_g, f.stream_id)
),
fine_vals AS (
    SELECT x.kind_g, x.site_g, x.class_g, x.nvtx_g, x.stream_id, x.host_ns, count(*) AS n
    FROM x SEMI JOIN wanted w
      ON w.kind_g = x.kind_g AND w.site_g = x.site_g AND w.class_g = x.class_g AND w.nvtx_g = x.nvtx_g
     AND w.stream_id IS NOT DISTINCT FROM x.stream_id AND w.b = x.host_ns >> 16
    GROUP BY ALL
),
vals AS (
    SELECT v."by", v.key, v.b, v.host_ns, sum(v.n)::BIGINT AS n
    FROM (SELECT u."by", group_key(u."by", kind_g, site_g, class_g, nvtx_g, stream_id) AS key,
                 host_ns >> 16 AS b, host_ns, n
          FROM fine_vals CROSS JOIN groupings u) v
    SEMI JOIN want w ON w."by" = v."by" AND w.key IS NOT DISTINCT FROM v.key AND w.b = v.b
    GROUP BY ALL
),
vcum AS (
    SELECT *, sum(n) OVER (PARTITION BY "by", key, b ORDER BY host_ns ROWS UNBOUNDED PRECEDING) AS upto FROM vals
),
picked AS (
    SELECT w."by", w.key, w.i, min(v.host_ns) AS value
    FROM want w JOIN vcum v ON v."by" = w."by" AND v.key IS NOT DISTINCT FROM w.key AND v.b = w.b AND v.upto >= w.r
    GROUP BY ALL
),
q AS MATERIALIZED (
    SELECT "by", key, [max(value) FILTER (WHERE i = 1), max(value) FILTER (WHERE i = 2)] AS q FROM picked GROUP BY ALL
),
-- Back from ids to labels, on the result rows only.
kind_names AS (SELECT DISTINCT kind_g, src_kind_name, dst_kind_name FROM kind_labels),
src_names AS (SELECT DISTINCT src_g, src_kind_name FROM kind_labels),
site_names AS (SELECT DISTINCT site_g, COALESCE(site, '(no backtrace)') AS site_label FROM attrib
               UNION SELECT 0, '(no backtrace)'),
class_names AS (SELECT DISTINCT class_g, source_class FROM attrib),
fix_names AS (SELECT DISTINCT fix_g, fix FROM attrib),
nvtx_names AS (SELECT DISTINCT name_g AS nvtx_g, COALESCE(name, '(no NVTX range)') AS label FROM nvtx_tree
               UNION SELECT 0, '(no NVTX range)'),
origins AS (SELECT * FROM (VALUES (1, 'native'), (2, 'python'), (4, 'none')) o(bit, name)),
named AS (
    SELECT g.*, q.q, kn.src_kind_name, kn.dst_kind_name,
           COALESCE(kn.src_kind_name || ' -> ' || kn.dst_kind_name, sn.site_label, cn.source_class, nn.label,
                    'stream ' || g.stream_id::VARCHAR) AS "group",
           (SELECT string_agg(s.src_kind_name, ',' ORDER BY s.src_kind_name) FROM src_names s
             WHERE list_contains(g.src_gs, s.src_g)) AS src_kinds,
           fn.fix,
           (SELECT string_agg(o.name, ',' ORDER BY o.name) FROM origins o WHERE g.origin_bits & o.bit <> 0) AS site_origins
    FROM g
    LEFT JOIN q ON q."by" = g."by" AND q.key IS NOT DISTINCT FROM g.key
    LEFT JOIN kind_names kn ON g."by" = 'kind' AND kn.kind_g = g.kind_g
    LEFT JOIN site_names sn ON g."by" = 'site' AND sn.site_g = g.site_g
    LEFT JOIN class_names cn ON g."by" = 'class' AND cn.class_g = g.class_g
    LEFT JOIN nvtx_names nn ON g."by" = 'nvtx' AND nn.nvtx_g = g.nvtx_g
    LEFT JOIN fix_names fn ON fn.fix_g = g.fix_g
)
SELECT "by", CASE WHEN "by" = 'kind' THEN src_kind_name END AS src_kind,
       CASE WHEN "by" = 'kind' THEN dst_kind_name END AS dst_kind, "group",
       calls, long_calls, blocking_calls, long_ns, blocking_ns, gpu_idle_ns, total_ns,
       q[1] AS p50_ns, q[2] AS p99_ns, max_ns, bytes, long_ns_in_steps, blocking_calls_in_steps,
       blocking_ns_in_steps, gpu_idle_ns_in_steps, src_kinds, fix, site_origins
FROM named
ORDER BY "by", gpu_idle_ns // 100000 DESC, long_ns DESC, calls DESC, "group";
