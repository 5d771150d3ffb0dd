-- kineto_unmatched: GPU copies of a Kineto trace whose API call is not in it (no runtime or driver event with
-- their correlation id) although it was made while the trace recorded. Kineto records only some CUDA driver
-- calls (cuLaunchKernelEx, ...), not the driver's copy functions (cuMemcpyHtoDAsync_v2, ...): their copies are
-- in the trace, their calls are not. Copies whose correlation id is below every recorded call's were issued
-- before recording began (model/orphans.sql counts them apart). No parameters.
SELECT count(*) FROM k_gpu g
WHERE g.kind = 0 AND NOT EXISTS (SELECT 1 FROM k_runtime r WHERE r.correlation_id = g.correlation_id)
  AND g.correlation_id >= (SELECT min(correlation_id) FROM k_runtime);
