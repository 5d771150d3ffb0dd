-- by_kind: per source/destination memory-kind pair (labels from the file's ENUM_CUDA_MEM_KIND).
-- Parameters: $min_ns (a call is long when host_ns >= it), $direction ('h2d', 'd2h' or 'all').
-- long_calls: host_ns >= $min_ns; blocking_calls: long and waited_for_gpu (see copies_x.sql).
SELECT src_kind_name AS src_kind, dst_kind_name AS dst_kind,
       count(*) AS calls,
       count(*) FILTER (WHERE host_ns >= $min_ns) AS long_calls,
       count(*) FILTER (WHERE host_ns >= $min_ns AND waited_for_gpu) AS blocking_calls,
       COALESCE(sum(host_ns) FILTER (WHERE host_ns >= $min_ns), 0)::BIGINT AS long_ns,
       COALESCE(sum(host_ns) FILTER (WHERE host_ns >= $min_ns AND waited_for_gpu), 0)::BIGINT AS blocking_ns,
       sum(host_ns)::BIGINT AS total_ns,
       quantile_disc(host_ns, 0.5) AS p50_ns,
       quantile_disc(host_ns, 0.99) AS p99_ns,
       max(host_ns) AS max_ns,
       sum(bytes)::BIGINT AS bytes
FROM copies_x
WHERE $direction = 'all' OR direction = $direction
GROUP BY ALL
ORDER BY long_ns DESC, calls DESC, src_kind, dst_kind;
