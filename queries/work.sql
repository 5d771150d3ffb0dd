-- work: everything that occupied a stream in the windows the backlogs need (device, stream, start,
-- end): kernels, memsets and copies (work_kernel, work_memset, work_memcpy: Arrow tables read by
-- ingest.py with sqlite_work_window.sql). No parameters.
CREATE OR REPLACE TEMP TABLE work AS
SELECT device_id, stream_id, start, "end" FROM work_kernel
UNION ALL SELECT device_id, stream_id, start, "end" FROM work_memset
UNION ALL SELECT device_id, stream_id, start, "end" FROM work_memcpy;
