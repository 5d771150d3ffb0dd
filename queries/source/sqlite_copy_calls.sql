-- sqlite_copy_calls: the condition SQLite itself applies while ingest.py reads CUPTI_ACTIVITY_KIND_RUNTIME
-- (SQLite syntax, raw nsys column names): only memcpy API calls of the runtime and the driver, asynchronous
-- or not (cudaMemcpy*, cuMemcpy*) leave SQLite, about a tenth of a typical runtime table, and the few
-- calls that pin host memory (cudaHostAlloc, cudaMallocHost, cudaHostRegister and their driver twins:
-- store_calls.sql keeps them apart, for the host_allocation cause of analyses/by_cause.sql). GLOB:
-- case-sensitive, as the API names are. NOT INDEXED: an index a file brings along may disagree with its
-- table (an edited file) and hide rows; nsys writes none on these tables. No parameters.
nameId IN (SELECT id FROM StringIds NOT INDEXED
           WHERE value GLOB 'cu*Memcpy*' OR value GLOB 'cudaHostAlloc*' OR value GLOB 'cudaMallocHost*'
              OR value GLOB 'cudaHostRegister*' OR value GLOB 'cuMemHostAlloc*' OR value GLOB 'cuMemAllocHost*'
              OR value GLOB 'cuMemHostRegister*')
AND correlationId IS NOT NULL
