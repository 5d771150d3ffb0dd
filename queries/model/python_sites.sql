-- python_sites: the Python call sites of the copy calls (--python-backtrace=cuda), from the frames
-- attribution.python_sites decoded: py_site_names (py_site_id, site, site_line) and python_sites
-- (global_pid, correlation_id, py_site_id; at most one row per call). No parameters.
CREATE TEMP TABLE py_site_names AS SELECT * FROM py_site_names_frame;
CREATE TEMP TABLE python_sites AS SELECT * FROM python_sites_frame;
