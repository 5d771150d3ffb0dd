-- global_tid: the macros that take nsys's globalTid apart (the Kineto adapter packs its pid/tid the same way).
-- No parameters. Run once per opened trace, before the views.

-- nsys packs a thread's ids into globalTid as (pid << 24) + tid (hardware ids above); activity rows carry
-- globalPid: the same with the tid bits zero. Every query takes them apart with these.
CREATE MACRO global_pid_of(global_tid) AS (global_tid // 16777216) * 16777216;
CREATE MACRO pid_of(global_tid) AS (global_tid // 16777216) % 16777216;
CREATE MACRO tid_of(global_tid) AS global_tid % 16777216;
