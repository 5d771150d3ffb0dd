-- attrib: call site and true source class of every copy call (table `attrib`), from the distinct
-- native stacks (temp table native_sites: site, copy_kernels = frames of at::native::copy_kernel_cuda)
-- and Python backtraces (python_sites) that attribution.py decoded, plus the fix per class (fixes).
-- A strided host source shows up as Pageable with copy_kernel_cuda twice on its stack: PyTorch
-- copied it through a pageable contiguous temporary. No evidence, no guess: 'unknown'.
CREATE TABLE attrib AS
WITH c AS (
    SELECT c.global_pid, c.correlation_id, c.direction, c.src_kind_name AS src, c.dst_kind_name AS dst,
           ns.callchain_id IS NOT NULL AS has_native, ns.copy_kernels, ns.site AS native_site,
           ps.site AS py_site, ps.site_line
    FROM copies c
    LEFT JOIN native_sites ns ON ns.callchain_id = c.callchain_id
    LEFT JOIN python_sites ps ON ps.global_pid = c.global_pid AND ps.correlation_id = c.correlation_id
),
k AS (
    SELECT *,
        CASE WHEN direction = 'h2d' THEN
                 CASE WHEN src = 'Pinned' THEN 'pinned'
                      WHEN src = 'Pageable' AND has_native AND copy_kernels >= 2 THEN 'pinned_strided'
                      WHEN src = 'Pageable' THEN 'pageable'
                      WHEN src LIKE 'Managed%' THEN 'managed'
                      WHEN src LIKE 'Device%' THEN 'device'
                      ELSE 'unknown' END
             WHEN src LIKE 'Device%' AND dst LIKE 'Device%' THEN 'device'
             WHEN src LIKE 'Managed%' THEN 'managed'
             WHEN src IN ('Pageable', 'Pinned') THEN lower(src)
             ELSE 'unknown' END AS source_class
    FROM c
)
SELECT k.global_pid, k.correlation_id,
       COALESCE(k.py_site, k.native_site) AS site,
       k.site_line,
       CASE WHEN k.py_site IS NOT NULL THEN 'python' WHEN k.native_site IS NOT NULL THEN 'native' END AS site_origin,
       k.source_class,
       CASE WHEN k.source_class = 'pinned_strided'
                THEN 'srcKind=Pageable and at::native::copy_kernel_cuda x' || k.copy_kernels ||
                     ' on the native stack: a strided source copied through a pageable contiguous temporary'
            WHEN k.source_class = 'pageable' AND k.direction = 'h2d' AND NOT k.has_native
                THEN 'srcKind=Pageable (no native stack: a strided pinned view cannot be ruled out)'
            WHEN k.source_class = 'pageable' AND k.direction = 'h2d'
                THEN 'srcKind=Pageable, at::native::copy_kernel_cuda x' || COALESCE(k.copy_kernels, 0) ||
                     ' on the native stack (direct copy)'
            ELSE 'srcKind=' || COALESCE(k.src, 'missing') || ', dstKind=' || COALESCE(k.dst, 'missing') END AS evidence,
       f.fix
FROM k
LEFT JOIN fixes f ON f.source_class = k.source_class;
