"""What to do about each source class: the fix every report prints (trace analysis and runtime checker).
Light: no imports, so the runtime checker can use it where only torch is installed."""

FIXES = {
    "pageable": "pin the source: `.pin_memory()` before `.to(device, non_blocking=True)`, or copy through a "
                "pre-pinned staging buffer reused every step (a C++ extension can also copy pageable memory without "
                "waiting: cudaMemcpyBatchAsync, srcAccessOrder DURING_API_CALL, CUDA 12.8+)",
    "pinned_strided": "the source is a strided view of pinned memory: copy its contiguous pieces (e.g. the rows "
                      "of `buf[:, :n]`) one by one, or keep the staging buffer contiguous; or let the kernels read "
                      "the pinned buffer in place through its device address (UVA staging: no copy call; every read "
                      "crosses PCIe, and the buffer may be rewritten only after its readers ran)",
    "pinned": "pinned and contiguous: keep it that way (a long call here waited for something else: see the stack)",
    "device": "device-to-device copy: not a host staging problem",
    "file_backed": "the source is memory-mapped from a file (safetensors/`torch.load(mmap=True)`/`np.memmap`/"
                   "`torch.from_file`): a pageable copy that may also read the file's pages from disk while the "
                   "GPU queue drains; materialize it once into pinned memory (`.pin_memory()` after loading, or "
                   "read the file into a pinned buffer), or stage it through a pinned buffer reused for every tensor",
    "managed": "managed memory: prefetch (cudaMemPrefetchAsync) or use explicit pinned/device buffers",
    "unknown": "no evidence in the trace: capture with --cudabacktrace=memory (and --python-backtrace=cuda)",
}
# The same advice for a program that calls CUDA itself (no PyTorch in the trace: CUDA C/C++, OpenACC, ...).
FIXES_CUDA = {
    **FIXES,
    "pageable": "the host buffer is pageable: allocate it with cudaHostAlloc/cudaMallocHost, or pin the existing "
                "allocation once with cudaHostRegister, and keep it for every copy; or, without pinning (CUDA 12.8+), "
                "copy with cudaMemcpyBatchAsync and srcAccessOrder DURING_API_CALL (source read before the call "
                "returns): 0.1-0.17 ms for 1-8 MiB behind a 20 ms queue on an H100, where cudaMemcpyAsync waited "
                "20 ms (docs/why-non-blocking-blocks.md)",
    "pinned_strided": "a strided (2D) source through a pageable temporary: copy from a contiguous pinned buffer "
                      "(cudaMemcpy2DAsync from pinned memory, or pack the rows first)",
    "pinned": "pinned: keep it that way (a long call here waited for something else: see the stack)",
    "unknown": "no evidence in the trace: capture with nsys --cudabacktrace=memory",
}
# Device-to-host copies: the class is the destination's (the host buffer the copy writes).
FIXES_D2H = {
    **FIXES,
    "pageable": "the destination is pageable: copy into a pinned buffer allocated once (`torch.empty(..., "
                "pin_memory=True)`) with `.copy_(t, non_blocking=True)` (or `t.to('cpu', non_blocking=True)`), "
                "record a CUDA event after it and `event.synchronize()` only where the host reads the values",
    "pinned_strided": "the destination is a strided view of pinned memory: PyTorch copies into a pageable "
                      "contiguous temporary first; copy into a contiguous pinned buffer and slice it on the host",
    "pinned": "pinned destination: keep it that way, and wait on an event only where the values are read",
}
FIXES_CUDA_D2H = {
    **FIXES_CUDA,
    "pageable": "the destination is pageable: copy into memory from cudaHostAlloc/cudaMallocHost (or registered "
                "with cudaHostRegister) and wait with cudaEventSynchronize only where the host reads it",
    "pinned_strided": "a strided (2D) destination through a pageable temporary: copy into a contiguous pinned "
                      "buffer (cudaMemcpy2DAsync into pinned memory)",
    "pinned": "pinned destination: keep it that way (a long call here waited for something else: see the stack)",
}

# A range that got slower after a pinning fix, with pinned allocations growing inside it (analyses/compare.py).
PINNING_COST = ("`.pin_memory()` pays a pinned allocation (cudaHostAlloc) whenever PyTorch's caching host allocator "
                "grows, and a host copy on every call: copy into one pinned staging buffer allocated once and "
                "reused (record an event after its copy and wait on it before rewriting the buffer), or keep the "
                "pageable copy where it cost less")
HOST_ALLOC_APIS = ("cudaHostAlloc", "cudaMallocHost", "cudaHostRegister", "cuMemHostAlloc", "cuMemAllocHost",
                   "cuMemHostRegister")

# A write into a pinned source while its non_blocking copy may still be in flight (runtime checker and lint).
REWRITE = ("record an event after the copy and wait for it (or use another buffer: double buffering) "
           "before writing the pinned source again; otherwise the GPU may read the new values")
# A device tensor built from host data (a list, a numpy array, a CPU tensor) in one call: PyTorch makes a pageable
# CPU tensor and copies it with non_blocking=False, which waits for the GPU work queued on the stream.
SYNC_BUILD = ("the host data is copied from pageable memory and the call waits for the stream: build it in a pinned "
              "staging buffer allocated once and copy with `.to(device, non_blocking=True)`, or keep it on the GPU")

# The one rule set of `nsysh2d lint`, the runtime checker and the gate: code -> (name, source class, level, fix).
# A site accepted in source (`# nsysh2d: ok[<code or name or class>] <reason>`) is accepted by all three
# (nsysh2d/rules/allowlist.py). The classes are analyze's; H2D003's copy is pinned, its cost the host allocation.
RULES = {
    "H2D000": ("suppression-without-reason", "", "error",
               "say why: `# nsysh2d: ok[RULE] <reason>` (a suppression without a reason does not suppress)"),
    "H2D001": ("pageable-non-blocking", "pageable", "error", FIXES["pageable"]),
    "H2D002": ("pinned-strided-view", "pinned_strided", "error", FIXES["pinned_strided"]),
    "H2D003": ("pin-memory-per-step", "pinned", "warning", PINNING_COST),
    "H2D004": ("pinned-rewrite-in-flight", "pinned", "error", REWRITE),
    "H2D005": ("pageable-device-tensor", "pageable", "warning", SYNC_BUILD),
    "H2D006": ("file-backed-non-blocking", "file_backed", "error", FIXES.get("file_backed", FIXES["pageable"])),
}
