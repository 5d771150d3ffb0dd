-- hook_names: the distinct names of the copy hook's ranges around copy calls (hook_calls, from hook_sites.sql),
-- parsed once each in attribution.python_sites. No parameters.
SELECT DISTINCT name FROM hook_calls;
