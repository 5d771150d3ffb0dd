-- copies_fold: one row in `folded` for each call of `copies` that has several runtime rows (capture
-- options such as --cudabacktrace add rows sharing the runtime row's correlationId) or several activity
-- rows (copy_keys_multi), and what was found in fold_stats. The pipeline runs it only when such calls,
-- or runtime rows without activity, exist. No parameters.
-- The call keeps its CUDA runtime row (the shortest if several) and any callchain of its rows;
-- several activity rows add up (their kinds, device and stream: the first row's by `pick`); exact duplicate
-- activity rows (a damaged export) count once. A call whose
-- rows disagree on its duration by more than 50 us is counted (disagreeing_rows): nsys's backtrace row spans
-- its call to within a few us (3.6 us at most on the bundled exports), and a long call relabelled as a
-- backtrace beside a short twin would otherwise be judged by the twin.
CREATE TEMP TABLE fold_api AS
WITH a AS (
    SELECT a.*, global_pid_of(a.global_tid) AS global_pid
    FROM api_raw a
    WHERE a.correlation_id IN (SELECT correlation_id FROM copy_keys_multi)
)
SELECT * FROM (
    SELECT *,
           max(callchain_id) OVER w AS any_callchain,
           count(*) OVER w AS api_rows,
           max("end" - start) OVER w - min("end" - start) OVER w AS duration_spread,
           -- Rows of API calls (runtime or driver), not of backtraces: two of them under one id are two
           -- calls that a damaged export made share a correlationId (they cannot be told apart: one is kept).
           count(*) FILTER (WHERE event_class IN (SELECT id FROM n.event_class_enum
                                                  WHERE label IN ('CUDA runtime', 'CUDA driver'))) OVER w AS call_rows,
           row_number() OVER (PARTITION BY global_pid, correlation_id
                              ORDER BY (event_class = (SELECT id FROM n.runtime_class)) IS TRUE DESC,
                                       ("end" - start) NULLS LAST) AS rn
    FROM a
    WINDOW w AS (PARTITION BY global_pid, correlation_id)
)
WHERE rn = 1 AND (global_pid, correlation_id) IN (SELECT global_pid, correlation_id FROM copy_keys_multi);

CREATE TEMP TABLE fold_memcpy_raw AS
SELECT * FROM memcpy_raw WHERE correlation_id IN (SELECT correlation_id FROM copy_keys_multi);

-- pick: the order in which a call's activity rows are told apart, so that kinds, device and stream come from one
-- row (the first by it) and the same export always gives the same call, whatever order the scan met its rows in.
CREATE TEMP TABLE fold_memcpy AS
SELECT *, [start, "end", bytes, copy_kind, src_kind, dst_kind, device_id, stream_id] AS pick
FROM (SELECT DISTINCT * FROM fold_memcpy_raw);

CREATE TEMP VIEW fold_calls AS
SELECT a.global_tid, a.global_pid, a.correlation_id, any_value(a.name_id) AS name_id,
       any_value(a.start) AS api_start, any_value(a."end") AS api_end,
       min(m.start) AS gpu_start, max(m."end") AS gpu_end, sum(m.bytes)::BIGINT AS bytes,
       arg_min(m.copy_kind, m.pick)::INTEGER AS copy_kind, arg_min(m.src_kind, m.pick)::INTEGER AS src_kind,
       arg_min(m.dst_kind, m.pick)::INTEGER AS dst_kind, arg_min(m.device_id, m.pick)::INTEGER AS device_id,
       arg_min(m.stream_id, m.pick)::INTEGER AS stream_id, count(*)::INTEGER AS activity_rows,
       any_value(a.api_rows)::INTEGER AS api_rows,
       any_value(COALESCE(a.callchain_id, a.any_callchain)) AS callchain_id
FROM fold_api a
JOIN fold_memcpy m
  ON m.correlation_id = a.correlation_id AND (m.global_pid IS NULL OR m.global_pid = a.global_pid)
GROUP BY a.global_tid, a.global_pid, a.correlation_id;

INSERT INTO folded BY NAME SELECT * FROM with_nvtx('fold_calls');

INSERT INTO fold_stats
SELECT (SELECT count(*) FROM fold_memcpy_raw) - (SELECT count(*) FROM fold_memcpy),
       (SELECT count(*) FROM fold_api WHERE call_rows > 1),
       (SELECT count(*) FROM (SELECT DISTINCT global_pid_of(global_tid), correlation_id FROM api_raw))
       - (SELECT count(*) FROM copies c ANTI JOIN copy_keys_multi k USING (global_pid, correlation_id))
       - (SELECT count(*) FROM folded),
       (SELECT count(*) FROM fold_api WHERE duration_spread > 50000);

DROP VIEW fold_calls;
DROP TABLE fold_api;
DROP TABLE fold_memcpy_raw;
DROP TABLE fold_memcpy;
