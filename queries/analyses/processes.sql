-- processes: how many processes made copy calls (by_process.sql runs only when there are several). No parameters.
SELECT count(DISTINCT global_pid) AS n FROM calls_k;
