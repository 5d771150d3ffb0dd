-- percall_memcpy: the memcpy activity (memcpy_raw, store_memcpy.sql) as the compiled pass indexes it by correlation id
-- and takes each call's activity columns from it (source/percall.py); any row order, the same for both. No parameters.
SELECT start, "end", device_id, stream_id, correlation_id, global_pid, bytes, copy_kind, src_kind, dst_kind
FROM memcpy_raw;
