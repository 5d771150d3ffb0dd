-- percall_api_rows: the number of copy calls the compiled pass read (source/percall.py), as the variable api_rows
-- that pipeline.FOLDS and calls.sql count instead of api_raw's rows (left empty: every call is in copies).
-- Parameters: $n.
SET VARIABLE api_rows = $n::BIGINT;
