-- store_memcpy: every memcpy activity row into memcpy_raw (store.sql), read by DuckDB's sqlite scanner
-- (whole tables: faster than ADBC, see docs/benchmarks.md). analysis.py checkpoints right after, which
-- compresses it. memcpy_multi: the keys with several activity rows (batched copies; a crafted file's
-- thousands), for copies_join.sql to keep their calls' rows from multiplying. No parameters.
INSERT INTO memcpy_raw BY NAME SELECT * FROM n.memcpy;

CREATE TEMP TABLE memcpy_multi AS
SELECT correlation_id FROM memcpy_raw WHERE correlation_id IS NOT NULL GROUP BY correlation_id HAVING count(*) > 1;
