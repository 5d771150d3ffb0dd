-- steady_set: the steady-state start of --steady-after as the DuckDB variable steady_from (ns; NULL: none), which
-- model/labels.sql's calls_k and analyses/by_cause.sql read (a view cannot take parameters). Parameter: $t.
SET VARIABLE steady_from = $t::BIGINT;
