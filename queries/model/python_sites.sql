-- python_sites: the Python call sites of the copy calls: from the frames attribution.python_sites decoded
-- (--python-backtrace=cuda, or a Kineto trace's Python events: bt_names_frame (py_site_id, site, site_line),
-- bt_sites_frame (global_pid, correlation_id, py_site_id)), else from the copy hook's range around the call
-- (hook_calls from hook_sites.sql; hook_names_frame (name, site, site_line, hook_class): each distinct range
-- name parsed once). nsys's backtraces win the site (the same call line); a Kineto trace's Python events name only
-- the function's first line, so there the hook's call line wins. The hook's class (hook_class: what it saw of the source,
-- pinned_strided or file_backed beyond the memory kind) is kept either way for attrib.sql.
-- Makes py_site_names (py_site_id, site, site_line, hook_class) and python_sites (global_pid,
-- correlation_id, py_site_id; at most one row per call). No parameters.
CREATE TEMP TABLE call_sites AS
WITH kineto AS (SELECT EXISTS (SELECT 1 FROM n.meta_export WHERE name = 'format' AND value = 'kineto') AS yes)
SELECT COALESCE(b.global_pid, h.global_pid) AS global_pid, COALESCE(b.correlation_id, h.correlation_id) AS correlation_id,
       CASE WHEN hn.site IS NOT NULL AND (SELECT yes FROM kineto) THEN hn.site ELSE COALESCE(bn.site, hn.site) END AS site,
       CASE WHEN hn.site IS NOT NULL AND (SELECT yes FROM kineto) THEN hn.site_line
            ELSE COALESCE(bn.site_line, hn.site_line) END AS site_line,
       hn.hook_class
FROM (bt_sites_frame b JOIN bt_names_frame bn USING (py_site_id))
FULL JOIN (hook_calls h JOIN hook_names_frame hn USING (name))
  ON b.global_pid = h.global_pid AND b.correlation_id = h.correlation_id;

CREATE TEMP TABLE py_site_names AS
SELECT (row_number() OVER (ORDER BY site, site_line, hook_class))::INTEGER AS py_site_id, site, site_line, hook_class
FROM (SELECT DISTINCT site, site_line, hook_class FROM call_sites);

CREATE TEMP TABLE python_sites AS
SELECT c.global_pid, c.correlation_id, p.py_site_id
FROM call_sites c
JOIN py_site_names p ON p.site = c.site AND p.site_line IS NOT DISTINCT FROM c.site_line
                    AND p.hook_class IS NOT DISTINCT FROM c.hook_class;

DROP TABLE call_sites;
