-- work: everything that occupied a stream in the windows the backlogs need (device, stream, start,
-- end): kernels and memsets (work_kernel, work_memset: Arrow tables read by ingest.py with
-- sqlite_work_window.sql) and copies (memcpy_raw, store.sql). {memcpy_where}: the same window
-- condition, filled in by analysis.py (integers only).
CREATE OR REPLACE TEMP TABLE work AS
SELECT device_id, stream_id, start, "end" FROM work_kernel
UNION ALL SELECT device_id, stream_id, start, "end" FROM work_memset
UNION ALL SELECT device_id, stream_id, start, "end" FROM memcpy_raw WHERE {memcpy_where};
