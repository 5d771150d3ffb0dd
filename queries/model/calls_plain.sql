-- calls_plain: the view `calls` (one row per memcpy API call) when no call has several runtime or
-- activity rows (pipeline.FOLDS is false): every row of copies is a call as it is. calls.sql makes the
-- general view otherwise. No parameters.
CREATE TEMP VIEW calls AS SELECT * FROM copies;
