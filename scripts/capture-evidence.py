#!/usr/bin/env python3
"""What evidence an nsys SQLite export keeps for its host-to-device copy calls, in plain SQL (stdlib only, so it
runs on the GPU host): copy calls, how many carry a native CUDA backtrace, how many Python backtrace marks the
export holds, the CPU samples, and whether the workload's copy-site file is named in any string.

usage: scripts/capture-evidence.py EXPORT.sqlite [SITE_FILE]   (prints one line of key=value)
"""
import sqlite3
import sys


def main() -> int:
    path = sys.argv[1]
    site = sys.argv[2] if len(sys.argv) > 2 else "qwen3vl_inputs.py"
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}

    def one(sql, default=0):
        try:
            return db.execute(sql).fetchone()[0] or default
        except sqlite3.Error:
            return "n/a"

    copies = one("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
                 "WHERE s.value LIKE 'cudaMemcpy%'")
    native = one("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
                 "WHERE s.value LIKE 'cudaMemcpy%' AND r.callchainId IS NOT NULL")
    py_marks = one("SELECT count(*) FROM NVTX_EVENTS WHERE binaryData IS NOT NULL") if "NVTX_EVENTS" in tables else 0
    samples = one("SELECT count(*) FROM COMPOSITE_EVENTS") if "COMPOSITE_EVENTS" in tables else 0
    names_site = one(f"SELECT count(*) FROM StringIds WHERE value LIKE '%{site}%'")
    print(f"copy_calls={copies} with_native_backtrace={native} python_backtrace_marks={py_marks} "
          f"cpu_samples={samples} strings_naming_{site}={names_site}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
