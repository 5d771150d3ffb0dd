-- hook_sites: the copy hook's range (capture/site_hook.py: 'nsysh2d.h2d <class> <function> <file:line>') around
-- each copy call, as table hook_calls (global_pid, correlation_id, name): the latest hook range started on the
-- call's thread by the call's start, if it is still open at the call's end (the hook's ranges never nest: it
-- wraps Tensor.to/.cuda/.copy_, which call no other of them). One ASOF join; nothing to join in a trace made
-- without the hook. No parameters.
CREATE TEMP TABLE hook_calls AS
WITH h AS MATERIALIZED (SELECT global_tid, start, "end", name FROM n.hook_ranges)
SELECT c.global_pid, c.correlation_id, h.name
FROM calls c
ASOF JOIN h ON h.global_tid = c.global_tid AND c.api_start >= h.start
WHERE h."end" >= c.api_end;
