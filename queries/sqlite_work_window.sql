-- sqlite_work_window: the condition SQLite applies, once per time window (OR-ed by analysis.py),
-- while ingest.py reads kernel, memset and memcpy rows for the backlogs (backlog.sql, top.sql).
-- A call's window runs from its start {lo} to its GPU copy's start {hi}: work that ended before the
-- call or started after its copy cannot be queued ahead of it (streams run in order). {lo} and {hi}
-- are integers (ns).
("end" >= {lo} AND start < {hi})
