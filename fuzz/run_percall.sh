#!/usr/bin/env bash
# Fuzzes the compiled per-call pass (nsysh2d/source/_percall_core.h): fuzz/run.sh with TARGET=percall.
# usage: fuzz/run_percall.sh SECONDS [WORK_FOLDER]    (docs/benchmarks.md records the runs)
TARGET=percall exec "$(dirname "$0")/run.sh" "$@"
