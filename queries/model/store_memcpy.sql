-- store_memcpy: every memcpy activity row into memcpy_raw (store.sql), read by DuckDB's sqlite scanner
-- (whole tables: faster than ADBC, see docs/benchmarks.md). analysis.py checkpoints right after, which
-- compresses it. No parameters.
INSERT INTO memcpy_raw BY NAME SELECT * FROM n.memcpy;
