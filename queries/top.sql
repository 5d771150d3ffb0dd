-- top: the $limit longest calls (host-side duration) with host_ns >= $min_ns, with everything that
-- explains them. Parameters: $min_ns, $direction, $limit.
SELECT api_start AS api_start_ns, host_ns, gpu_ns, bytes::BIGINT AS bytes,
       src_kind_name AS src_kind, dst_kind_name AS dst_kind, source_class, waited_for_gpu,
       site, site_line, nvtx_range, nvtx_path, api_name, pid, tid, device_id AS device, stream_id AS stream,
       backlog_ns, device_backlog_ns, wait_ns, host_ns - greatest(least(wait_ns, host_ns), 0) AS rest_ns,
       evidence, fix
FROM copies_x
WHERE ($direction = 'all' OR direction = $direction) AND host_ns >= $min_ns
ORDER BY host_ns DESC, api_start
LIMIT $limit;
