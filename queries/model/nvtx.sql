-- nvtx: the NVTX range tree of each thread, built once per trace (tables nvtx_ranges, nvtx_tree,
-- nvtx_events).
-- nvtx_ranges: the ranges, read from the file once (steps.sql and anomalies.sql use them too).
-- nvtx_depth: the number of ranges open on a thread after each range start/end (ends first at a
-- tie); nvtx_tree: every range with its nesting depth, its whole path ('step 4 > prepare > copy') and
-- a number for its name.
-- Push/pop ranges nest by construction; a start/end range that overlaps others only gets a
-- shallower or deeper path, never a crash. No parameters.
CREATE TEMP TABLE nvtx_ranges AS SELECT * FROM n.nvtx_ranges;

CREATE TEMP TABLE nvtx_ranges_id AS
SELECT row_number() OVER (ORDER BY global_tid, start, "end" DESC) AS id, * FROM nvtx_ranges;

CREATE TEMP TABLE nvtx_depth AS
WITH ev AS (
    SELECT id, global_tid, start AS t, 1 AS delta, 1 AS ord FROM nvtx_ranges_id
    UNION ALL
    SELECT id, global_tid, "end" AS t, -1 AS delta, 0 AS ord FROM nvtx_ranges_id
)
SELECT id, global_tid, t, delta, ord,
       sum(delta) OVER (PARTITION BY global_tid ORDER BY t, ord, id ROWS UNBOUNDED PRECEDING) AS depth
FROM ev;

CREATE TEMP TABLE nvtx_parent AS
WITH r AS (
    SELECT i.*, d.depth FROM nvtx_ranges_id i JOIN nvtx_depth d ON d.id = i.id AND d.delta = 1
)
SELECT c.id, c.global_tid, c.start, c."end", c.name, c.depth, p.id AS parent_id
FROM r c
ASOF LEFT JOIN r p ON p.global_tid = c.global_tid AND p.depth = c.depth - 1 AND c.start >= p.start;

DROP TABLE nvtx_ranges_id;   -- early: the step's peak memory is what it holds at once

-- A path names at most the outermost 32 ranges, then ' > … > ' and the range's own name: ranges nested thousands
-- deep made paths whose total length grew as the square of the depth (out of memory at 5,000).
-- The recursion stops at depth 512 (one join per level: 10,000 levels took 9 s); a deeper range's path is
-- '… > ' and its own name.
CREATE TEMP TABLE nvtx_tree AS
WITH RECURSIVE paths(id, path, head, n) AS (
    SELECT id, name, name, 1 FROM nvtx_parent WHERE parent_id IS NULL
    UNION ALL
    SELECT c.id, CASE WHEN p.n < 32 THEN p.path || ' > ' || c.name ELSE p.head || ' > … > ' || c.name END,
           CASE WHEN p.n < 32 THEN p.path || ' > ' || c.name ELSE p.head END, p.n + 1
    FROM nvtx_parent c JOIN paths p ON p.id = c.parent_id
    WHERE c.depth <= 512
)
SELECT c.id, c.global_tid, c.start, c."end", c.name, c.depth, c.parent_id, COALESCE(p.path, '… > ' || c.name) AS path,
       -- name_g: one number per distinct name (0: none), what summary.sql groups on
       (CASE WHEN c.name IS NULL THEN 0 ELSE dense_rank() OVER (ORDER BY c.name) END)::INTEGER AS name_g
FROM nvtx_parent c LEFT JOIN paths p ON p.id = c.id;

-- nvtx_events: per thread and time, the innermost range open right after every range start/end at
-- that time (NULL: none): after a start, that range; after an end, its parent. One ASOF join on
-- it gives each call its range (copies.sql). Ends at one time run innermost first, starts outermost
-- first, so the last event of a time decides.
CREATE TEMP TABLE nvtx_events AS
WITH ev AS (
    SELECT d.global_tid, d.t,
           arg_max(CASE WHEN d.delta = 1 THEN d.id ELSE r.parent_id END,
                   d.ord * 4611686018427387904 + CASE WHEN d.delta = 1 THEN d.id ELSE -d.id END) AS inner_id
    FROM nvtx_depth d
    JOIN nvtx_parent r ON r.id = d.id
    GROUP BY d.global_tid, d.t
)
-- with that range's end and name number (inner_end, inner_g): what with_nvtx needs of it, so that it
-- joins no range per call.
SELECT ev.global_tid, ev.t, ev.inner_id, t."end" AS inner_end, t.name_g AS inner_g
FROM ev
LEFT JOIN nvtx_tree t ON t.id = ev.inner_id;

DROP TABLE nvtx_parent;
DROP TABLE nvtx_depth;

-- with_nvtx(calls): the calls of the named table or view (global_tid, api_start, api_end, ...) with
-- their innermost enclosing NVTX range (nvtx_id; NULL: none) and that range's name number (nvtx_g, 0:
-- none: stored with the call, so that grouping by name joins no range per call; at 2x that join of 4 M
-- calls with 400 k ranges was 0.5 s of summary.sql's 1.2). The range open right after the
-- thread's latest range event before the call, if it also outlasts the call: one ASOF join, against the
-- only events it can land on: those within the calls' own time span and each thread's last before it
-- (the ASOF join sorts what it is given: copies_join.sql runs this once per range of calls, and every
-- range sorting all events made the join grow faster than the trace; 4x: 0.30 -> 0.15 s per range).
-- The events carry their range's end and name number: a join with nvtx_tree here built a hash table of
-- every range once per range of calls. j is not materialized: reading the calls twice (their span, the
-- join) costs less than writing them out (the copy join at 1x 1.00 -> 0.94 s).
CREATE TEMP MACRO with_nvtx(calls) AS TABLE
WITH j AS NOT MATERIALIZED (SELECT * FROM query_table(calls)),
span AS (SELECT min(api_start) AS lo_t, max(api_start) AS hi_t FROM j),
ev AS (
    SELECT e.global_tid, e.t, e.inner_id, e.inner_end, e.inner_g
    FROM nvtx_events e, span WHERE e.t BETWEEN span.lo_t AND span.hi_t
    UNION ALL
    -- t is unique per thread (nvtx_events has one row per thread and time): the same row for each column
    SELECT e.global_tid, max(e.t), arg_max(e.inner_id, e.t), arg_max(e.inner_end, e.t), arg_max(e.inner_g, e.t)
    FROM nvtx_events e, span WHERE e.t < span.lo_t
    GROUP BY e.global_tid
)
SELECT j.*, CASE WHEN e.inner_end >= j.api_end THEN e.inner_id END::INTEGER AS nvtx_id,
       COALESCE(CASE WHEN e.inner_end >= j.api_end THEN e.inner_g END, 0)::INTEGER AS nvtx_g
FROM j
ASOF LEFT JOIN ev e ON e.global_tid = j.global_tid AND j.api_start >= e.t;

-- step_ranges(pattern): the step ranges (name matching the regular expression) that count as steps, numbered
-- by start and end from 0 across processes (step). Not steps (issue 54: thousands of them diluted the per-step
-- figures): a range shorter than 10 us (no step of a CUDA program is shorter than its first launch: the
-- shortest real step in tests/data lasts 59 us), or one that starts before an earlier step range of its process
-- ended (a duplicate, a nested or an overlapping one: steps of a process follow each other, and its time is
-- the earlier step's). steps.sql counts the ranges left out.
CREATE TEMP MACRO step_ranges(pattern) AS TABLE
SELECT global_pid, start, "end", (row_number() OVER (ORDER BY start, "end") - 1)::INTEGER AS step FROM (
    SELECT global_pid_of(global_tid) AS global_pid, start, "end",
           max("end") OVER (PARTITION BY global_pid_of(global_tid) ORDER BY start, "end" DESC
                            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS ended
    FROM nvtx_ranges WHERE regexp_matches(name, pattern) AND "end" - start >= 10000)
WHERE ended IS NULL OR start >= ended;

-- with_step(calls, pattern): the calls of the named table or view (global_pid, api_start, api_end, ...)
-- with the ordinal of the step range they ran in (step: the NVTX ranges whose name matches the regular
-- expression, numbered by start and end from 0, across processes; a call belongs to the first step of
-- its process that contains it whole; NULL: none). Exact for nested, overlapping and touching steps too:
-- in a process's steps in order, the first one that ends at or after the call ends is the first to set a
-- new latest end (every earlier one ended before the call did); it is the answer if it also started by
-- the call's start, else no step contains the call. So the record-setting steps split each process's
-- time into disjoint spans (previous record's end, this one's end], clipped to the step itself (a call
-- ending before the step starts is not in it), and a call's step is the span holding its end. The
-- spans are cut into time buckets of 2^k ns (k: the smallest that keeps them few) and joined on the
-- bucket of the call's end: a hash join, linear in the calls. An ASOF join sorted every call for it (2x:
-- 0.86 s of by_step's 0.66 s wall, growing faster than the trace); a join on the containment itself paired
-- every call with every step of its process (quadratic).
CREATE TEMP MACRO with_step(calls, pattern) AS TABLE
WITH steps AS (SELECT * FROM step_ranges(pattern)),
records AS MATERIALIZED (
    SELECT global_pid, start, greatest(start, ended_before + 1) AS lo, "end" AS hi, step FROM (
        SELECT *, max("end") OVER (PARTITION BY global_pid ORDER BY step
                                   ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS ended_before
        FROM steps)
    WHERE ended_before IS NULL OR "end" > ended_before
),
pick AS MATERIALIZED (   -- at most ~4 buckets per span (k = 62 always qualifies: 2 per span)
    SELECT min(k) AS k FROM (
        SELECT t.k, sum((r.hi >> t.k) - (r.lo >> t.k) + 1) AS n FROM records r, range(0, 63) t(k) GROUP BY t.k)
    WHERE n <= 4 * (SELECT count(*) FROM records) + 4096
),
buckets AS MATERIALIZED (
    SELECT r.global_pid, r.start, r.lo, r.hi, r.step, unnest(range(r.lo >> p.k, (r.hi >> p.k) + 1)) AS b
    FROM records r, pick p
),
-- The call's bucket is a column before the join: as an expression over pick inside the ON clause, a
-- reordered join (an inner one, once a caller keeps only calls in steps) lost it as a hash key.
j AS (SELECT c.*, c.api_end >> p.k AS step_bucket_ FROM query_table(calls) c, pick p)
SELECT j.* EXCLUDE (step_bucket_), s.step
FROM j
LEFT JOIN buckets s
  ON s.global_pid = j.global_pid AND s.b = j.step_bucket_
 AND j.api_end BETWEEN s.lo AND s.hi AND s.start <= j.api_start;
