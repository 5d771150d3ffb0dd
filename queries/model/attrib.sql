-- attrib: call site, true source class, evidence and fix (table `attrib`) for each distinct
-- (native stack, Python site, kind) among the calls; copies_x joins it to every call. Inputs from
-- attribution.py: native_sites (per callchain: site, copy_kernels = frames of
-- at::native::copy_kernel_cuda), py_site_names (per py_site_id: site, site_line) and fixes (per class);
-- calls_k and kind_labels from labels.sql. No parameters.
-- A strided host source shows up as Pageable with copy_kernel_cuda twice on its stack: PyTorch
-- copied it through a pageable contiguous temporary. No evidence, no guess: 'unknown'.
CREATE TEMP TABLE native_sites AS SELECT * FROM native_sites_frame;
CREATE TEMP TABLE fixes AS SELECT * FROM fixes_frame;
-- PyTorch or a program calling CUDA itself: the fixes differ (.pin_memory() vs cudaHostAlloc). StringIds holds
-- every kernel and frame name: PyTorch's kernels and frames are in the at::, c10:: and THP namespaces.
CREATE TEMP TABLE framework AS
SELECT CASE WHEN EXISTS (SELECT 1 FROM py_site_names)
              OR EXISTS (SELECT 1 FROM n.strings WHERE value LIKE '%at::native::%' OR value LIKE '%c10::%'
                         OR value LIKE 'THPVariable%' OR value LIKE '%at::cuda::%')
            THEN 'torch' ELSE 'cuda' END AS name;

CREATE TEMP TABLE attrib AS
WITH keys AS (
    SELECT DISTINCT callchain_id, py_site_id, kind_id FROM calls_k
),
c AS (
    SELECT k.*, kl.direction, kl.src_kind_name AS src, kl.dst_kind_name AS dst,
           ns.callchain_id IS NOT NULL AS has_native, ns.copy_kernels, ns.site AS native_site,
           pn.site AS py_site, pn.site_line
    FROM keys k
    JOIN kind_labels kl ON kl.kind_id = k.kind_id
    LEFT JOIN native_sites ns ON ns.callchain_id = k.callchain_id
    LEFT JOIN py_site_names pn ON pn.py_site_id = k.py_site_id
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
SELECT k.callchain_id, k.py_site_id, k.kind_id,
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
       f.fix || CASE
           -- Where to look is half the fix: say how to get it where the trace has no file:line.
           WHEN k.source_class IN ('pinned', 'device', 'unknown') OR k.py_site IS NOT NULL THEN ''
           WHEN (SELECT name FROM framework) = 'torch'
               THEN '; for its Python file:line, capture with `nsysh2d profile --python-backtrace`'
           WHEN k.native_site IS NULL THEN '; for its call site, capture with nsys --cudabacktrace=memory'
           ELSE '' END AS fix
FROM k
LEFT JOIN fixes f ON f.source_class = k.source_class AND f.framework = (SELECT name FROM framework);
