-- known_enums: the ids of memory kinds, copy kinds and event classes as every ENUM_* table seen writes
-- them (nsys 2022.4 .. 2026.1: identical), for exports that have no ENUM tables (nsys <= 2022.1, or a
-- file whose ENUM tables are gone). schema.py uses a table only when the file lacks its ENUM table,
-- and says so once. No parameters.
CREATE TEMP TABLE known_mem_kind (id INTEGER, label VARCHAR);
INSERT INTO known_mem_kind VALUES (0, 'Pageable'), (1, 'Pinned'), (2, 'Device'), (3, 'Array'), (4, 'Managed'),
    (5, 'Device Static'), (6, 'Managed Static'), (7, 'Unknown');
CREATE TEMP TABLE known_copy_kind (id INTEGER, label VARCHAR);
INSERT INTO known_copy_kind VALUES (0, 'Unknown'), (1, 'Host-to-Device'), (2, 'Device-to-Host'),
    (3, 'Host-to-Array'), (4, 'Array-to-Host'), (5, 'Array-to-Array'), (6, 'Array-to-Device'),
    (7, 'Device-to-Array'), (8, 'Device-to-Device'), (9, 'Host-to-Host'), (10, 'Peer-to-Peer'),
    (11, 'Unified Host-to-Device'), (12, 'Unified Device-to-Host'), (13, 'Unified Device-to-Device');
CREATE TEMP TABLE known_event_class (id INTEGER, label VARCHAR);
INSERT INTO known_event_class VALUES (0, 'CUDA runtime'), (1, 'CUDA driver');
