-- percall_events: the NVTX events of nvtx.sql (nvtx_events) in the order the compiled pass searches them
-- (source/percall.py): by thread and time, none NULL in either (with_nvtx's ASOF join never lands on those).
-- No parameters.
SELECT global_tid, t, inner_id, inner_end, inner_g FROM nvtx_events
WHERE global_tid IS NOT NULL AND t IS NOT NULL ORDER BY global_tid, t;
