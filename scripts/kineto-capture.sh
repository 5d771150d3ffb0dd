#!/usr/bin/env bash
# Captures the committed Kineto (torch.profiler) traces of tests/data/kineto/ on the GPU host, with each
# workload's own host timer beside them. Results go to $OUT (default ./kineto-out).
# usage: scripts/kineto-capture.sh STAGE...   stages: env api sweep train qwen-before qwen-after qwen-uva steady
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$repo/kineto-out}
mkdir -p "$OUT"
PY=$(command -v python3)
work=/tmp/nsysh2d   # neutral folder: frame names hold the workloads' paths
rm -rf "$work/src" && mkdir -p "$work/src" "$work/out"
cp -r "$repo/nsysh2d" "$repo/workloads" "$work/src/"
clean() { (cd "$work" && env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 \
  LD_LIBRARY_PATH=/usr/local/nvidia/lib64 PYTHONPATH="$work/src" PYTHONUNBUFFERED=1 "$@"); }
kineto() { name=$1; shift; clean "$PY" -m nsysh2d.capture.torch_profile -o "$work/out/$name.pt.trace.json.gz" "$@";
  "$PY" "$repo/scripts/scrub-kineto.py" "$work/out/$name.pt.trace.json.gz" "$OUT/$name.pt.trace.json.gz"; }
for stage in "$@"; do
  echo "=== $stage $(date -u +%H:%M:%S)"
  case $stage in
    env) { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv;
      "$PY" -c 'import torch, sys; print("torch", torch.__version__, "cuda", torch.version.cuda, "python", sys.version.split()[0])'; } \
      | tee "$OUT/env.txt" ;;
    api) kineto api-probe "$work/src/workloads/api_probe.py" 2>&1 | grep -v USDT | tee "$OUT/api-probe-kineto.txt" ;;
    sweep) kineto h2d-sweep "$work/src/workloads/h2d_sweep.py" --sizes 65536,1048576,4194304,16777216 \
      --backlogs-ms 0,10 --inflight 1,2 --repeats 2 --json "$OUT/h2d-sweep-kineto.json" 2>&1 | grep -v USDT | tail -30 ;;
    train) for v in before after; do kineto train-loop-$v "$work/src/workloads/train_loop.py" --variant $v --depth 8 \
      --steps 30 2>&1 | grep -v USDT | tee -a "$OUT/train-kineto.txt"; done ;;
    qwen-before|qwen-after|qwen-uva) v=${stage#qwen-}; kineto qwen3vl-$v "$work/src/workloads/qwen3vl.py" --variant $v \
      ${QWEN_ARGS:-} 2>&1 | grep -v USDT | tee -a "$OUT/qwen3vl-kineto.txt" ;;
    steady) for v in before after; do kineto steady-loop-$v "$work/src/workloads/steady_loop.py" --variant $v \
      --json "$OUT/steady-loop-$v.json" 2>&1 | grep -v USDT | tee -a "$OUT/steady-loop-kineto.txt"; done ;;
  esac
done
ls -la "$OUT"
