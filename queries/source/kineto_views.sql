-- kineto_views: the normalized views n.* over the tables kineto.py filled from a Kineto trace (k_*), the same
-- columns schema.VIEWS gives an nsys export. Copy and memory kinds are read from each copy's name and get the
-- ids of known_enums.sql (run first, with global_tid.sql); a name that does not parse exactly (kineto.py's
-- MEMCPY_NAME), or a kind word CUPTI does not use, gives NULL ids: the copy is unclassified and fails the gate
-- rather than read as Unknown and not judged (issue 54). A copy's process is its API call's (GPU events carry the device as
-- pid). Graph replays arrive as their kernels, so n.graph is empty. No parameters.
CREATE SCHEMA n;
CREATE TEMP TABLE kineto_copy_kind AS SELECT * FROM (VALUES
    ('HtoD', 'Host-to-Device'), ('DtoH', 'Device-to-Host'), ('HtoA', 'Host-to-Array'), ('AtoH', 'Array-to-Host'),
    ('AtoA', 'Array-to-Array'), ('AtoD', 'Array-to-Device'), ('DtoA', 'Device-to-Array'),
    ('DtoD', 'Device-to-Device'), ('HtoH', 'Host-to-Host'), ('PtoP', 'Peer-to-Peer')) t(short, label);
CREATE TEMP TABLE kineto_pids AS
SELECT correlation_id, min(global_pid_of(global_tid)) AS global_pid FROM k_runtime GROUP BY ALL;
-- The CPU ops around each copy call on its thread, innermost first (k_chains: one sweep per thread in
-- kineto_ops.py, at most 16 a call; a join of ops against calls grew as their product): the call's stack
-- (n.callchains), with one callchain id per call, as nsys gives a call with a backtrace.
CREATE TEMP VIEW kineto_chains AS SELECT global_tid, correlation_id, symbol, depth FROM k_chains;
CREATE TEMP TABLE kineto_chain_ids AS
SELECT global_tid, correlation_id, row_number() OVER (ORDER BY global_tid, correlation_id) AS callchain_id
FROM (SELECT DISTINCT global_tid, correlation_id FROM kineto_chains);
CREATE VIEW n.runtime AS
SELECT r.start, r."end", r.event_class, r.global_tid, r.correlation_id, r.name_id, i.callchain_id
FROM k_runtime r LEFT JOIN kineto_chain_ids i USING (global_tid, correlation_id);
CREATE VIEW n.memcpy AS
SELECT g.start, g."end", g.device_id, g.stream_id, g.correlation_id, p.global_pid,
       CASE WHEN g.bytes >= 0 THEN g.bytes END AS bytes,
       ck.id AS copy_kind, sk.id AS src_kind, dk.id AS dst_kind
FROM k_gpu g
LEFT JOIN k_copy_names c USING (name_id)
LEFT JOIN kineto_copy_kind s ON s.short = c.copy_kind
LEFT JOIN known_copy_kind ck ON ck.label = s.label
LEFT JOIN known_mem_kind sk ON sk.label = c.src_kind
LEFT JOIN known_mem_kind dk ON dk.label = c.dst_kind
LEFT JOIN kineto_pids p USING (correlation_id)
WHERE g.kind = 0;
-- torch.profiler writes no graph node id for a copy: no copy in a Kineto trace is a graph's (model/orphans.sql).
CREATE VIEW n.memcpy_graph AS
SELECT correlation_id, global_pid, CAST(NULL AS BIGINT) AS graph_node_id FROM n.memcpy WHERE false;
CREATE VIEW n.kernel AS
SELECT g.start, g."end", g.device_id, g.stream_id, g.correlation_id, p.global_pid, g.name_id
FROM k_gpu g LEFT JOIN kineto_pids p USING (correlation_id) WHERE g.kind = 2;
CREATE VIEW n.memset AS
SELECT g.start, g."end", g.device_id, g.stream_id, g.correlation_id, p.global_pid, CAST(NULL AS BIGINT) AS name_id
FROM k_gpu g LEFT JOIN kineto_pids p USING (correlation_id) WHERE g.kind = 1;
CREATE VIEW n.graph AS
SELECT start, "end", device_id, stream_id, correlation_id, CAST(NULL AS BIGINT) AS global_pid,
       CAST(NULL AS BIGINT) AS name_id FROM k_gpu WHERE false;
CREATE VIEW n.strings AS SELECT id, value FROM k_strings;
CREATE VIEW n.mem_kind_enum AS SELECT id, label FROM known_mem_kind;
CREATE VIEW n.copy_kind_enum AS SELECT id, label FROM known_copy_kind;
CREATE VIEW n.event_class_enum AS SELECT id, label FROM known_event_class;
CREATE VIEW n.event_type_enum AS SELECT CAST(NULL AS INTEGER) AS id, CAST(NULL AS VARCHAR) AS label WHERE false;
-- record_function ranges nest by time on their thread, as NVTX push/pop ranges do.
CREATE VIEW n.nvtx AS
SELECT start, "end", CAST(NULL AS INTEGER) AS event_type, CAST(NULL AS VARCHAR) AS text, name_id AS text_id,
       global_tid, CAST(NULL AS BIGINT) AS domain_id
FROM k_ranges;
CREATE VIEW n.callchains AS
SELECT i.callchain_id AS id, c.symbol, CAST(NULL AS BIGINT) AS module, c.depth
FROM kineto_chains c JOIN kineto_chain_ids i USING (global_tid, correlation_id);
CREATE VIEW n.meta_export AS SELECT name, value FROM k_meta;
CREATE VIEW n.gpu_info AS SELECT name FROM k_gpu_info;
CREATE VIEW n.meta_capture AS SELECT name, value FROM k_meta WHERE false;
