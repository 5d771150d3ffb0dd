-- sweep: the copies of a workloads/h2d_sweep.py capture, one row per repeat of each measured case
-- (the slowest copy of the repeat: the last of several in flight, or one of pinned_rows' three),
-- with the case parameters parsed from the NVTX range name
-- 'h2d variant=V bytes=N backlog_us=B inflight=K idx=I rep=R'.
-- waited: waited_behind_backlog (model/rules.sql) for the backlog measured at the call; NULL when under a tenth of the
-- queued backlog was left at the call (e.g. a large strided source whose host-side copy outlasted
-- it): such a repeat cannot tell. No parameters.
WITH c AS (
    SELECT regexp_extract(nvtx_range, 'variant=(\S+)', 1) AS variant,
           CAST(regexp_extract(nvtx_range, 'bytes=(\d+)', 1) AS BIGINT) AS payload,
           CAST(regexp_extract(nvtx_range, 'backlog_us=(\d+)', 1) AS BIGINT) AS backlog_us,
           CAST(regexp_extract(nvtx_range, 'inflight=(\d+)', 1) AS BIGINT) AS inflight,
           CAST(regexp_extract(nvtx_range, 'rep=(\d+)', 1) AS BIGINT) AS rep,
           host_ns, backlog_ns, wait_ns
    FROM copies_x
    WHERE direction = 'h2d' AND regexp_matches(nvtx_range, '^h2d variant=\S+ bytes=\d+ backlog_us=\d+ inflight=\d+ idx=\d+ rep=\d+$')
)
SELECT variant, payload, backlog_us, inflight, rep,
       max(host_ns) AS host_ns,
       max(backlog_ns) AS backlog_ns,
       CASE WHEN c.backlog_us = 0 OR max(c.backlog_ns) < 100 * c.backlog_us THEN NULL
            ELSE bool_or(waited_behind_backlog(c.host_ns, c.backlog_ns)) END AS waited,
       count(*) AS copies
FROM c
GROUP BY variant, payload, c.backlog_us, inflight, rep
ORDER BY variant, backlog_us, inflight, payload, rep;
