-- sqlite_copy_calls: the condition SQLite itself applies while ingest.py reads CUPTI_ACTIVITY_KIND_RUNTIME
-- (SQLite syntax, raw nsys column names): only asynchronous memcpy API calls (cudaMemcpy*Async*,
-- cuMemcpy*Async*) leave SQLite, about a tenth of a typical runtime table. GLOB: case-sensitive, as
-- the API names are. No parameters.
nameId IN (SELECT id FROM StringIds WHERE value GLOB 'cu*Memcpy*Async*') AND correlationId IS NOT NULL
