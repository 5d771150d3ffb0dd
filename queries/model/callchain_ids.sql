-- callchain_ids: the distinct native stacks (CUDA backtrace ids) of the copy calls, for Trace.native_stacks to read
-- from the file. No parameters.
SELECT DISTINCT callchain_id FROM calls WHERE callchain_id IS NOT NULL ORDER BY callchain_id;
