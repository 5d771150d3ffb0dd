-- store_memcpy_part: adds one part of the memcpy activity (Arrow table memcpy_part, read by ingest.py)
-- to memcpy_raw (store.sql). analysis.py adds every part before the first copies_part.sql. No parameters.
INSERT INTO memcpy_raw BY NAME SELECT * FROM memcpy_part;
