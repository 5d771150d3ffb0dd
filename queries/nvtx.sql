-- nvtx: the NVTX range tree of each thread, built once per trace (tables nvtx_tree, nvtx_depth).
-- nvtx_depth: the number of ranges open on a thread after each range start/end (ends first at a
-- tie); nvtx_tree: every range with its nesting depth and its whole path ('step 4 > prepare > copy').
-- Push/pop ranges nest by construction; a start/end range that overlaps others only gets a
-- shallower or deeper path, never a crash. No parameters.
CREATE TEMP TABLE nvtx_ranges_id AS
SELECT row_number() OVER (ORDER BY global_tid, start, "end" DESC) AS id, * FROM n.nvtx_ranges;

CREATE TEMP TABLE nvtx_depth AS
WITH ev AS (
    SELECT id, global_tid, start AS t, 1 AS delta, 1 AS ord FROM nvtx_ranges_id
    UNION ALL
    SELECT id, global_tid, "end" AS t, -1 AS delta, 0 AS ord FROM nvtx_ranges_id
)
SELECT id, global_tid, t, delta,
       sum(delta) OVER (PARTITION BY global_tid ORDER BY t, ord, id ROWS UNBOUNDED PRECEDING) AS depth
FROM ev;

CREATE TEMP TABLE nvtx_parent AS
WITH r AS (
    SELECT i.*, d.depth FROM nvtx_ranges_id i JOIN nvtx_depth d ON d.id = i.id AND d.delta = 1
)
SELECT c.id, c.global_tid, c.start, c."end", c.name, c.depth, p.id AS parent_id
FROM r c
ASOF LEFT JOIN r p ON p.global_tid = c.global_tid AND p.depth = c.depth - 1 AND c.start >= p.start;

CREATE TEMP TABLE nvtx_tree AS
WITH RECURSIVE paths(id, path) AS (
    SELECT id, name FROM nvtx_parent WHERE parent_id IS NULL
    UNION ALL
    SELECT c.id, p.path || ' > ' || c.name FROM nvtx_parent c JOIN paths p ON p.id = c.parent_id
)
SELECT c.global_tid, c.start, c."end", c.name, c.depth, p.path
FROM nvtx_parent c JOIN paths p ON p.id = c.id;

DROP TABLE nvtx_parent;
DROP TABLE nvtx_ranges_id;
