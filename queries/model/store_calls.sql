-- store_calls: adds one part of the memcpy API calls (Arrow table api_part: runtime rows filtered inside
-- SQLite by source/sqlite_copy_calls.sql, read by ingest.py) to api_raw (store.sql), compressed after each
-- part. Only appends: the joins run once over all parts (copies_join.sql), not once per part. No parameters.
-- The host-allocation calls that came along go to alloc_raw instead.
INSERT INTO api_raw BY NAME SELECT * FROM api_part WHERE name_id NOT IN (SELECT id FROM alloc_names);
INSERT INTO alloc_raw BY NAME SELECT * FROM api_part WHERE name_id IN (SELECT id FROM alloc_names);
