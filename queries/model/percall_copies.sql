-- percall_copies: one part of the copy calls the compiled pass joined (Arrow table percall_part, source/percall.py:
-- each call's runtime columns, its one activity row's and its innermost NVTX range) into copies, the rows
-- copies_join.sql makes when nothing needs folding; the host-allocation calls into alloc_raw (as store_calls.sql).
-- No parameters.
INSERT INTO copies BY NAME
SELECT global_tid, global_pid_of(global_tid) AS global_pid, correlation_id, name_id, start AS api_start,
       "end" AS api_end, gpu_start, gpu_end, bytes, copy_kind, src_kind, dst_kind, device_id, stream_id,
       1 AS activity_rows, 1 AS api_rows, callchain_id, nvtx_id, nvtx_g
FROM percall_part WHERE name_id NOT IN (SELECT id FROM alloc_names);

INSERT INTO alloc_raw BY NAME
SELECT start, "end", event_class, global_tid, correlation_id, name_id, callchain_id
FROM percall_part WHERE name_id IN (SELECT id FROM alloc_names);
