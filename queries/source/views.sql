-- views: version-independent helper views over the normalized n.* views (built by trace.py).
-- No parameters. Run once per opened trace.

-- The event class of CUDA runtime API rows (backtrace rows share their correlationId).
CREATE VIEW n.runtime_class AS
SELECT min(id) AS id FROM n.event_class_enum WHERE label = 'CUDA runtime';

-- NVTX ranges (push/pop and start/end) with their text resolved; marks are left out. Names are cut
-- at 1024 characters (anomalies.sql counts them): a multi-MB name would be copied into every row.
-- The ranges nsysh2d's copy hook opens around each copy ('nsysh2d.h2d ...', capture/site_hook.py) are not the
-- program's: they are n.hook_ranges, read for call sites (model/hook_sites.sql), and left out of n.nvtx_ranges.
CREATE VIEW n.all_nvtx_ranges AS
SELECT nv.start, nv."end", nv.global_tid,
       CASE WHEN length(COALESCE(nv.text, s.value)) > 1024
            THEN left(COALESCE(nv.text, s.value), 1023) || '…' ELSE COALESCE(nv.text, s.value) END AS name
FROM n.nvtx nv
LEFT JOIN n.strings s ON s.id = nv.text_id
WHERE nv."end" IS NOT NULL AND nv."end" >= nv.start
  AND (NOT EXISTS (SELECT 1 FROM n.event_type_enum)
       OR nv.event_type IN (SELECT id FROM n.event_type_enum
                            WHERE label IN ('NvtxPushPopRange', 'NvtxStartEndRange')));

CREATE VIEW n.nvtx_ranges AS
SELECT * FROM n.all_nvtx_ranges WHERE name IS NULL OR NOT starts_with(name, 'nsysh2d.h2d ');

CREATE VIEW n.hook_ranges AS
SELECT * FROM n.all_nvtx_ranges WHERE starts_with(name, 'nsysh2d.h2d ');
