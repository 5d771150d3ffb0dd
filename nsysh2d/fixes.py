"""What to do about each source class: the fix every report prints (trace analysis and runtime checker).
Light: no imports, so the runtime checker can use it where only torch is installed."""

FIXES = {
    "pageable": "pin the source: `.pin_memory()` before `.to(device, non_blocking=True)`, or copy through a "
                "pre-pinned staging buffer reused every step",
    "pinned_strided": "the source is a strided view of pinned memory: copy its contiguous pieces (e.g. the rows "
                      "of `buf[:, :n]`) one by one, or keep the staging buffer contiguous",
    "pinned": "pinned and contiguous: keep it that way (a long call here waited for something else: see the stack)",
    "device": "device-to-device copy: not a host staging problem",
    "managed": "managed memory: prefetch (cudaMemPrefetchAsync) or use explicit pinned/device buffers",
    "unknown": "no evidence in the trace: capture with --cudabacktrace=memory (and --python-backtrace=cuda)",
}
# The same advice for a program that calls CUDA itself (no PyTorch in the trace: CUDA C/C++, OpenACC, ...).
FIXES_CUDA = {
    **FIXES,
    "pageable": "the host buffer is pageable: allocate it with cudaHostAlloc/cudaMallocHost, or pin the existing "
                "allocation once with cudaHostRegister, and keep it for every copy",
    "pinned_strided": "a strided (2D) source through a pageable temporary: copy from a contiguous pinned buffer "
                      "(cudaMemcpy2DAsync from pinned memory, or pack the rows first)",
    "pinned": "pinned: keep it that way (a long call here waited for something else: see the stack)",
    "unknown": "no evidence in the trace: capture with nsys --cudabacktrace=memory",
}
