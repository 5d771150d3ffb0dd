-- work_window: the condition that picks, once per time window (OR-ed by analysis.py), the kernel,
-- memset and memcpy rows the backlogs need (work.sql). A call's window runs from its start {lo} to
-- its GPU copy's start {hi}: work that ended before the call or started after its copy cannot be
-- queued ahead of it (streams run in order). {lo} and {hi} are integers (ns).
("end" >= {lo} AND start < {hi})
