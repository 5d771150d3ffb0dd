-- percall_memcpy: the memcpy activity the compiled pass read (Arrow table percall_memcpy, source/percall.py) into
-- memcpy_raw (store.sql), and memcpy_multi, as store_memcpy.sql makes them from n.memcpy. Parameters: $dups, the
-- number of repeated keys the pass found (none: no GROUP BY over every row).
INSERT INTO memcpy_raw BY NAME SELECT * FROM percall_memcpy;

CREATE TEMP TABLE memcpy_multi AS
SELECT correlation_id FROM memcpy_raw WHERE $dups > 0 AND correlation_id IS NOT NULL GROUP BY correlation_id HAVING count(*) > 1;
