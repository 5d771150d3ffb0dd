-- attrib: call site, true source class, evidence and fix (table `attrib`) for each distinct
-- (native stack, Python site, kind) among the calls; copies_x joins it to every call. Inputs from
-- attribution.py: native_sites (per callchain: site, copy_kernels = frames of
-- at::native::copy_kernel_cuda, or Kineto's aten::copy_ ops around the call: copy_frame says which),
-- py_site_names (per py_site_id: site, site_line) and fixes (per
-- framework, direction and class);
-- calls_k and kind_labels from labels.sql. No parameters.
-- The class is the host buffer's: the source of an h2d copy, the destination of a d2h one. A strided
-- host buffer shows up as Pageable with copy_kernel_cuda twice on its stack: PyTorch copied it through
-- a pageable contiguous temporary (h2d: before the copy, d2h: after it). No evidence, no guess: 'unknown'.
CREATE TEMP TABLE native_sites AS SELECT * FROM native_sites_frame;
CREATE TEMP TABLE fixes AS SELECT * FROM fixes_frame;
-- PyTorch or a program calling CUDA itself: the fixes differ (.pin_memory() vs cudaHostAlloc). StringIds holds
-- every kernel and frame name: PyTorch's kernels and frames are in the at::, c10:: and THP namespaces.
CREATE TEMP TABLE framework AS
SELECT CASE WHEN EXISTS (SELECT 1 FROM py_site_names)
              OR EXISTS (SELECT 1 FROM n.strings WHERE value LIKE '%at::native::%' OR value LIKE '%c10::%'
                         OR value LIKE 'THPVariable%' OR value LIKE '%at::cuda::%')
            THEN 'torch' ELSE 'cuda' END AS name;
-- What the stacks are: nsys's native backtraces, or the CPU ops a Kineto trace holds around each call.
CREATE TEMP TABLE stack_name AS
SELECT CASE WHEN EXISTS (SELECT 1 FROM n.meta_export WHERE name = 'format' AND value = 'kineto')
            THEN 'CPU op stack' ELSE 'native stack' END AS name;
-- How to capture the stacks and Python call sites this trace lacks, in its own format.
CREATE TEMP TABLE capture_hint AS
SELECT CASE WHEN (SELECT name FROM stack_name) = 'CPU op stack'
            THEN '`torch.profiler.profile(activities=[CPU, CUDA], with_stack=True)` (as `nsysh2d profile --kineto` does)'
            ELSE '`nsysh2d profile --python-backtrace`' END AS how;

CREATE TEMP TABLE attrib AS
WITH keys AS (
    SELECT DISTINCT callchain_id, py_site_id, kind_id FROM calls_k
),
c AS (
    SELECT k.*, kl.direction, kl.src_kind_name AS src, kl.dst_kind_name AS dst,
           CASE kl.direction WHEN 'h2d' THEN kl.src_kind_name WHEN 'd2h' THEN kl.dst_kind_name END AS host,
           CASE kl.direction WHEN 'd2h' THEN 'dst' ELSE 'src' END AS side,
           ns.callchain_id IS NOT NULL AS has_native, ns.copy_kernels, ns.copy_frame, ns.site AS native_site,
           pn.site AS py_site, pn.site_line, pn.hook_class
    FROM keys k
    JOIN kind_labels kl ON kl.kind_id = k.kind_id
    LEFT JOIN native_sites ns ON ns.callchain_id = k.callchain_id
    LEFT JOIN py_site_names pn ON pn.py_site_id = k.py_site_id
),
k AS (
    SELECT *,
        CASE WHEN direction IN ('h2d', 'd2h') THEN
                 CASE WHEN host = 'Pinned' THEN 'pinned'
                      WHEN host = 'Pageable' AND has_native AND copy_kernels >= 2 THEN 'pinned_strided'
                      -- What the copy hook saw of the source (capture/site_hook.py), where no stack says more.
                      WHEN host = 'Pageable' AND direction = 'h2d' AND hook_class = 'file_backed' THEN 'file_backed'
                      WHEN host = 'Pageable' AND direction = 'h2d' AND NOT has_native
                           AND hook_class = 'pinned_strided' THEN 'pinned_strided'
                      WHEN host = 'Pageable' THEN 'pageable'
                      WHEN host LIKE 'Managed%' THEN 'managed'
                      WHEN host LIKE 'Device%' THEN 'device'
                      ELSE 'unknown' END
             WHEN src LIKE 'Device%' AND dst LIKE 'Device%' THEN 'device'
             WHEN src LIKE 'Managed%' THEN 'managed'
             WHEN src IN ('Pageable', 'Pinned') THEN lower(src)
             ELSE 'unknown' END AS source_class
    FROM c
),
a AS (
    SELECT k.callchain_id, k.py_site_id, k.kind_id,
           COALESCE(k.py_site, k.native_site) AS site,
           k.site_line,
           CASE WHEN k.py_site IS NOT NULL THEN 'python' WHEN k.native_site IS NOT NULL THEN 'native' END AS site_origin,
           k.source_class,
           CASE WHEN k.hook_class IS NOT NULL AND k.source_class IN ('pinned_strided', 'file_backed', 'pageable')
                    AND NOT k.has_native AND k.direction = 'h2d'
                    THEN 'srcKind=Pageable; nsysh2d''s copy hook saw ' || CASE k.source_class
                         WHEN 'pinned_strided' THEN 'a strided view of pinned memory (copied through a pageable contiguous temporary)'
                         WHEN 'file_backed' THEN 'a source in a file mapping (memory-mapped file)'
                         ELSE 'an unpinned source' END
                WHEN k.source_class = 'file_backed'
                    THEN 'srcKind=Pageable; nsysh2d''s copy hook saw a source in a file mapping (memory-mapped file)'
                WHEN k.source_class = 'pinned_strided'
                    THEN k.side || 'Kind=Pageable and ' || k.copy_frame || ' x' || k.copy_kernels ||
                         ' on the ' || (SELECT name FROM stack_name) || ': a strided ' || CASE k.side WHEN 'dst' THEN 'destination' ELSE 'source' END
                         || ' copied through a pageable contiguous temporary'
                WHEN k.source_class = 'pageable' AND NOT k.has_native
                    THEN k.side || 'Kind=Pageable (no native stack: a strided pinned view cannot be ruled out)'
                WHEN k.source_class = 'pageable'
                    THEN k.side || 'Kind=Pageable, ' || k.copy_frame || ' x' || COALESCE(k.copy_kernels, 0) ||
                         ' on the ' || (SELECT name FROM stack_name) || ' (direct copy)'
                ELSE 'srcKind=' || COALESCE(k.src, 'missing') || ', dstKind=' || COALESCE(k.dst, 'missing') END AS evidence,
           f.fix || CASE
               -- Where to look is half the fix: say how to get it where the trace has no file:line.
               WHEN k.py_site IS NOT NULL THEN ''
               -- A trace made with the copy hook names the site of every copy made through PyTorch's tensors.
               WHEN k.direction = 'h2d' AND EXISTS (SELECT 1 FROM hook_calls)
                   THEN '; no call site: this copy did not go through PyTorch''s Tensor.to/.cuda/.copy_ (a C++ '
                        || 'extension, CuPy, or a library calling CUDA itself), which nsysh2d''s copy hook wraps'
               WHEN k.source_class IN ('pinned', 'device', 'unknown') THEN ''
               -- Classed by memory kind alone (the default capture records no stacks): the strided-pinned
               -- case looks the same and needs the other fix.
               WHEN (SELECT name FROM framework) = 'torch' AND k.source_class = 'pageable' AND NOT k.has_native
                   THEN '; classed by memory kind alone (no stack in this capture): if the source is a strided '
                        || 'view of pinned memory, copy its contiguous rows instead; ' || (SELECT how FROM capture_hint)
                        || ' records the stacks that tell them apart, and the Python file:line'
               WHEN (SELECT name FROM framework) = 'torch'
                   THEN '; for its Python file:line, capture with ' || (SELECT how FROM capture_hint)
               WHEN k.native_site IS NULL THEN '; for its call site, capture with nsys --cudabacktrace=memory'
               ELSE '' END AS fix
    FROM k
    LEFT JOIN fixes f ON f.source_class = k.source_class AND f.framework = (SELECT name FROM framework)
                     AND f.direction = CASE k.direction WHEN 'd2h' THEN 'd2h' ELSE 'h2d' END
)
-- site_g, class_g, fix_g: one number per distinct site, class and fix (0: none), what summary.sql groups on.
SELECT a.*,
       (CASE WHEN site IS NULL THEN 0 ELSE dense_rank() OVER (ORDER BY site) END)::INTEGER AS site_g,
       (CASE WHEN source_class IS NULL THEN 0 ELSE dense_rank() OVER (ORDER BY source_class) END)::INTEGER AS class_g,
       (CASE WHEN fix IS NULL THEN 0 ELSE dense_rank() OVER (ORDER BY fix) END)::INTEGER AS fix_g
FROM a;
