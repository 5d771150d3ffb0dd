-- long_calls: how many long calls of a direction there are (whether GPU idle is computed for all of them,
-- backlog_probes.sql). Parameters: $min_ns, $direction.
SELECT count(*) AS n FROM copies_x WHERE is_long(host_ns, $min_ns) AND ($direction = 'all' OR direction = $direction);
