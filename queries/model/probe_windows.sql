-- probe_windows: adds the time windows (call start -> the later of its end and its GPU copy start:
-- the backlog needs the work queued before the copy, the GPU idle time the work during the call) of the calls in `probes` to
-- work_windows, and makes work_spans: all windows asked for so far, merged where they overlap. The
-- rows of the work table (work.sql) must cover all of them; with more than 64 spans, one span from
-- the first start to the last end (the condition is evaluated on every row: a long list would cost
-- more than it saves). No parameters.
INSERT INTO work_windows
SELECT api_start, greatest(gpu_start, api_end, api_start) FROM probes WHERE api_start IS NOT NULL;

CREATE OR REPLACE TEMP TABLE work_spans AS
WITH s AS (
    SELECT lo, hi, max(hi) OVER (ORDER BY lo, hi ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_hi
    FROM work_windows
),
g AS (
    SELECT lo, hi, sum(CASE WHEN prev_hi IS NULL OR lo > prev_hi THEN 1 ELSE 0 END)
                       OVER (ORDER BY lo, hi ROWS UNBOUNDED PRECEDING) AS grp
    FROM s
),
merged AS (SELECT min(lo) AS lo, max(hi) AS hi FROM g GROUP BY grp)
SELECT lo, hi FROM merged WHERE (SELECT count(*) FROM merged) <= 64
UNION ALL
SELECT min(lo), max(hi) FROM merged HAVING count(*) > 64;
