-- views_copy_calls: the copy API calls of a trace whose format fills the views n.* itself (Kineto), read from them
-- (runtime and driver, cudaMemcpy* / cuMemcpy*) and
-- the calls that pin host memory, with
-- the columns and types ingest.py's parts of an nsys export have (the same filter as sqlite_copy_calls.sql).
-- No parameters.
SELECT start, "end", CAST(event_class AS INTEGER) AS event_class, global_tid, correlation_id,
       CAST(name_id AS INTEGER) AS name_id, callchain_id
FROM n.runtime
WHERE name_id IN (SELECT id FROM n.strings
                  WHERE value GLOB 'cu*Memcpy*' OR value GLOB 'cudaHostAlloc*' OR value GLOB 'cudaMallocHost*'
                     OR value GLOB 'cudaHostRegister*' OR value GLOB 'cuMemHostAlloc*' OR value GLOB 'cuMemAllocHost*'
                     OR value GLOB 'cuMemHostRegister*')
  AND correlation_id IS NOT NULL;
