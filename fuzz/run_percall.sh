#!/usr/bin/env bash
# Fuzzes the compiled per-call pass (nsysh2d/source/_percall_core.h, over _sqlite_ints_core.h) with libFuzzer,
# AddressSanitizer and UBSan, on the same seed files as fuzz/run.sh. Needs clang-14 and libclang-rt-14-dev (Debian),
# the SQLite headers and an installed nsysh2d (for the statements).
# usage: fuzz/run_percall.sh SECONDS [WORK_FOLDER]    (docs/benchmarks.md records the runs)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-600}; work=${2:-/tmp/h2d-pcfuzz}
mkdir -p "$work"
python fuzz/make_inputs.py "$work"
clang-14 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  fuzz/percall_fuzz.c -lsqlite3 -lm -o "$work/percall_fuzz"
mkdir -p "$work/found"
H2D_FUZZ_SQL="$work/percall_statements.txt" "$work/percall_fuzz" -max_total_time="$secs" -timeout=10 \
  -rss_limit_mb=2048 -max_len=65536 -artifact_prefix="$work/found/" -print_final_stats=1 "$work/corpus" 2>&1 | tail -25
