-- probe_windows: the time windows (call start -> its GPU copy start) of the calls in `probes` and
-- of those done before (table work_windows), merged where they overlap: the rows of the work table
-- (work.sql) must cover all of them. No parameters.
WITH w AS (
    SELECT api_start AS lo, greatest(gpu_start, api_start) AS hi FROM probes WHERE api_start IS NOT NULL
    UNION ALL SELECT lo, hi FROM work_windows
),
s AS (
    SELECT lo, hi, max(hi) OVER (ORDER BY lo, hi ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_hi
    FROM w
),
g AS (
    SELECT lo, hi, sum(CASE WHEN prev_hi IS NULL OR lo > prev_hi THEN 1 ELSE 0 END)
                       OVER (ORDER BY lo, hi ROWS UNBOUNDED PRECEDING) AS grp
    FROM s
)
SELECT min(lo) AS lo, max(hi) AS hi FROM g GROUP BY grp ORDER BY lo;
