#!/usr/bin/env bash
# Fuzzes a compiled part with libFuzzer, AddressSanitizer and UBSan on files cut from the bundled exports: the reader
# (nsysh2d/source/_sqlite_ints_core.h; TARGET sqlite_ints, the default) or the per-call pass (_percall_core.h, over
# the reader; TARGET percall: fuzz/run_percall.sh). Needs clang-14 and libclang-rt-14-dev (Debian), the SQLite headers
# and an installed nsysh2d (for the statements).
# usage: [TARGET=percall] fuzz/run.sh SECONDS [WORK_FOLDER]    (docs/benchmarks.md records the runs)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${TARGET:-sqlite_ints}
case $target in
  sqlite_ints) statements=statements.txt; default_work=/tmp/h2d-fuzz ;;
  percall) statements=percall_statements.txt; default_work=/tmp/h2d-pcfuzz ;;
  *) echo "fuzz/run.sh: TARGET must be sqlite_ints or percall" >&2; exit 2 ;;
esac
secs=${1:-600}; work=${2:-$default_work}
mkdir -p "$work"
python fuzz/make_inputs.py "$work"
clang-14 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  "fuzz/${target}_fuzz.c" -lsqlite3 -lm -o "$work/${target}_fuzz"
mkdir -p "$work/found"
H2D_FUZZ_SQL="$work/$statements" "$work/${target}_fuzz" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
  -max_len=65536 -artifact_prefix="$work/found/" -print_final_stats=1 "$work/corpus" 2>&1 | tail -25
