-- work: everything that occupied a stream in the windows the backlogs need (device, stream, start,
-- end): kernels and memsets (read by DuckDB's sqlite scanner, which evaluates the windows vectorized:
-- 0.4 s for 10 windows over 5 M kernels, against 0.7 s with the condition inside SQLite) and copies
-- (memcpy_raw, store.sql). {where}: the windows (work_window.sql), filled in by analysis.py.
CREATE OR REPLACE TEMP TABLE work AS
SELECT device_id::INTEGER AS device_id, stream_id::INTEGER AS stream_id, start, "end" FROM n.kernel WHERE {where}
UNION ALL
SELECT device_id::INTEGER, stream_id::INTEGER, start, "end" FROM n.memset WHERE {where}
UNION ALL
SELECT device_id, stream_id, start, "end" FROM memcpy_raw WHERE {where};
