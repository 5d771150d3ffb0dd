-- function_names: the names of a Kineto trace's Python frames (python_function events, `file.py(line): function`),
-- by id, for function_times.py to keep the user's own (id, value). No parameters.
SELECT id, value FROM n.strings WHERE id IN (SELECT DISTINCT name_id FROM k_py) ORDER BY id;
