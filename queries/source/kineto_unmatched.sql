-- kineto_unmatched: GPU copies of a Kineto trace whose API call is not in it (no runtime or driver event with
-- their correlation id). Kineto records only some CUDA driver calls (cuLaunchKernelEx, ...), not the driver's
-- copy functions (cuMemcpyHtoDAsync_v2, ...): their copies are in the trace, their calls are not. No parameters.
SELECT count(*) FROM k_gpu g
WHERE g.kind = 0 AND NOT EXISTS (SELECT 1 FROM k_runtime r WHERE r.correlation_id = g.correlation_id);
