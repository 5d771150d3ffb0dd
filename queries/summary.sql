-- summary: figures per group of copy calls. Parameters: $min_ns (a call is long when host_ns >= it),
-- $direction ('h2d', 'd2h' or 'all'), $by: 'kind' (source/destination memory-kind pair, labels from
-- the file's ENUM_CUDA_MEM_KIND), 'site' (call site signature), 'class' (true source class),
-- 'nvtx' (innermost enclosing NVTX range) or 'stream'.
-- long_calls: host_ns >= $min_ns; blocking_calls: long and waited_for_gpu (see copies_x.sql).
SELECT CASE WHEN $by = 'kind' THEN src_kind_name END AS src_kind,
       CASE WHEN $by = 'kind' THEN dst_kind_name END AS dst_kind,
       CASE $by WHEN 'kind' THEN src_kind_name || ' -> ' || dst_kind_name
                WHEN 'site' THEN COALESCE(site, '(no backtrace)')
                WHEN 'class' THEN source_class
                WHEN 'nvtx' THEN COALESCE(nvtx_range, '(no NVTX range)')
                WHEN 'stream' THEN 'stream ' || stream_id::VARCHAR END AS "group",
       count(*) AS calls,
       count(*) FILTER (WHERE host_ns >= $min_ns) AS long_calls,
       count(*) FILTER (WHERE host_ns >= $min_ns AND waited_for_gpu) AS blocking_calls,
       COALESCE(sum(host_ns) FILTER (WHERE host_ns >= $min_ns), 0)::BIGINT AS long_ns,
       COALESCE(sum(host_ns) FILTER (WHERE host_ns >= $min_ns AND waited_for_gpu), 0)::BIGINT AS blocking_ns,
       sum(host_ns)::BIGINT AS total_ns,
       quantile_disc(host_ns, 0.5) AS p50_ns,
       quantile_disc(host_ns, 0.99) AS p99_ns,
       max(host_ns) AS max_ns,
       sum(bytes)::BIGINT AS bytes,
       string_agg(DISTINCT src_kind_name, ',' ORDER BY src_kind_name) AS src_kinds,
       any_value(fix ORDER BY host_ns DESC) AS fix
FROM copies_x
WHERE $direction = 'all' OR direction = $direction
GROUP BY ALL
ORDER BY long_ns DESC, calls DESC, "group";
