-- store: the per-call tables of one trace, kept compressed in memory (DuckDB's in-memory database
-- with COMPRESS compresses at each CHECKPOINT; the pipeline runs one after the steps that fill it):
-- 2 M calls take ~90 MB instead of ~300 MB, so a multi-GB export is analysed in a few hundred MB
-- without spilling to disk. Unqualified names find these tables (search_path). No parameters.
--   memcpy_raw  the memcpy activity (CUPTI_ACTIVITY_KIND_MEMCPY), every row (store_memcpy.sql)
--   api_raw     the runtime rows of the memcpy API calls (sqlite_copy_calls.sql), part by part
--               (store_calls.sql), until calls.sql
--   copies      one row per (runtime row, activity row) pair (copies_join.sql)
--   folded      the calls with several such rows, one row each (copies_fold.sql, when there are any)
--   fold_stats  what folding found (copies_fold.sql)
--   orphan_stats  copy activity no named API call claims (orphans.sql, when there is unclaimed activity)
--   alloc_raw   the calls that pin host memory (sqlite_copy_calls.sql lets them through; store_calls.sql)
--   alloc_names their function names' ids (a handful of strings)
ATTACH ':memory:' AS store (COMPRESS);
SET search_path = 'main,store.main';

CREATE TABLE store.memcpy_raw (start BIGINT, "end" BIGINT, device_id INTEGER, stream_id INTEGER,
                               correlation_id BIGINT, global_pid BIGINT, bytes BIGINT, copy_kind INTEGER,
                               src_kind INTEGER, dst_kind INTEGER);
CREATE TABLE store.api_raw (start BIGINT, "end" BIGINT, event_class INTEGER, global_tid BIGINT,
                            correlation_id BIGINT, name_id INTEGER, callchain_id BIGINT);
CREATE TABLE store.copies (global_tid BIGINT, global_pid BIGINT, correlation_id BIGINT, name_id INTEGER,
                           api_start BIGINT, api_end BIGINT, gpu_start BIGINT, gpu_end BIGINT, bytes BIGINT,
                           copy_kind INTEGER, src_kind INTEGER, dst_kind INTEGER, device_id INTEGER,
                           stream_id INTEGER, activity_rows INTEGER, api_rows INTEGER, callchain_id BIGINT,
                           nvtx_id INTEGER, nvtx_g INTEGER);
CREATE TABLE store.folded AS SELECT * FROM store.copies WHERE false;
CREATE TABLE store.fold_stats (memcpy_duplicates BIGINT, shared_correlation BIGINT, api_rows_without_activity BIGINT,
                               disagreeing_rows BIGINT);
CREATE TABLE store.orphan_stats (activity_without_call BIGINT, before_capture BIGINT);
CREATE TABLE store.alloc_raw AS SELECT * FROM store.api_raw WHERE false;
CREATE TABLE store.alloc_names AS
SELECT id::INTEGER AS id FROM n.strings
WHERE regexp_matches(value, '^(cudaHostAlloc|cudaMallocHost|cudaHostRegister|cuMemHostAlloc|cuMemAllocHost|cuMemHostRegister)');
