#!/usr/bin/env bash
# Captures the committed H200 traces (tests/data/h200/) and the sweep's host-timer table.
# Runs on the H200 capture host from a checkout; results go to $OUT (default ./h200-out).
# No stage reads tests/data. A checkout sent to a lent GPU host may be capped in size (64 MiB here), and the
# committed traces come near it: move tests/data/h200/qwen3vl-*.sqlite aside for that call.
# usage: scripts/h200-capture.sh STAGE...   stages: env sweep-host sweep-trace qwen-host qwen-trace graph api api-pybt queue check train d2h
#        qwen-variants qwen-uva-trace capture-cost queue-depth bisect causes rewrites two-proc tp sites-sampled
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$repo/h200-out}
mkdir -p "$OUT"
PY=$(command -v python3)
NSYS=${NSYS:-/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys}
# Neutral folder and minimal environment: nsys records the working folder and environments.
work=/tmp/nsysh2d
rm -rf "$work/src" && mkdir -p "$work/src" "$work/out"
cp -r "$repo/nsysh2d" "$repo/workloads" "$work/src/"
[ -d "$repo/.devkit" ] && cp -r "$repo/.devkit" "$work/devkit"
clean() { (cd "$work" && env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 \
  LD_LIBRARY_PATH=/usr/local/nvidia/lib64 PYTHONPATH="$work/src" PYTHONUNBUFFERED=1 NSYS="$NSYS" "$@"); }
profile() { clean "$PY" -m nsysh2d.cli profile -o "$work/out" --importer-lib "$work/devkit" "$@"; }
QWEN_ARGS=${QWEN_ARGS:-}
for stage in "$@"; do
  echo "=== $stage $(date -u +%H:%M:%S)"
  case $stage in
    env)
      { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; "$NSYS" --version;
        "$PY" -c 'import torch, sys; print("torch", torch.__version__, "cuda", torch.version.cuda, "python", sys.version.split()[0])';
        "$NSYS" export --help; } > "$OUT/env.txt" 2>&1; head -5 "$OUT/env.txt" ;;
    sweep-host)
      clean "$PY" "$work/src/workloads/h2d_sweep.py" --json "$work/out/sweep-host.json" | tee "$OUT/sweep-host.txt"
      cp "$work/out/sweep-host.json" "$OUT/" ;;
    sweep-trace)
      profile --name h2d-sweep --no-variants --cudabacktrace none --sample none \
        "$work/src/workloads/h2d_sweep.py" -- ${SWEEP_ARGS:-} > "$OUT/sweep-trace.log" 2>&1; echo "rc=$?"; tail -3 "$OUT/sweep-trace.log"
      cp "$work/out/h2d-sweep.sqlite" "$OUT/" ;;
    qwen-host)
      clean "$PY" "$work/src/workloads/qwen3vl.py" --check-identical $QWEN_ARGS | tee -a "$OUT/qwen-host.txt" ;;
    qwen-trace)
      profile ${PROFILE_ARGS:-} "$work/src/workloads/qwen3vl.py" -- $QWEN_ARGS > "$OUT/qwen-trace.log" 2>&1; echo "rc=$?"
      grep -E "^\[|identical|wrote|next" "$OUT/qwen-trace.log" | tail -20
      cp "$work/out"/qwen3vl-*.sqlite "$OUT/" ;;
    graph)  # workloads/graph_probe.py: host timer, then traces with --cuda-graph-trace=graph (default) and =node
      for v in eager graph; do clean "$PY" "$work/src/workloads/graph_probe.py" --variant $v | tee -a "$OUT/graph-host.txt"; done
      probe="--sample none --cudabacktrace none $work/src/workloads/graph_probe.py"
      profile --name graph-probe $probe > "$OUT/graph-trace.log" 2>&1; echo "rc=$?"
      profile --name graph-probe-node --variants graph --nsys-arg=--cuda-graph-trace=node $probe >> "$OUT/graph-trace.log" 2>&1
      echo "rc=$?"; grep -E "graph_probe|wrote" "$OUT/graph-trace.log"
      for f in graph-probe-eager graph-probe-graph graph-probe-node-graph; do
        "$PY" "$repo/.devkit/tools/scrub-trace.py" "$work/out/$f.sqlite" "$OUT/$f.sqlite"; done ;;
    api|api-pybt)  # workloads/api_probe.py: host timer, then a trace (api-pybt: with Python backtraces)
      name=api-probe; args="--sample none --cudabacktrace none"
      [ "$stage" = api-pybt ] && { name=api-probe-pybt; args="--python-backtrace"; }
      [ "$stage" = api ] && clean "$PY" "$work/src/workloads/api_probe.py" | tee -a "$OUT/api-host.txt"
      profile --name $name --no-variants $args "$work/src/workloads/api_probe.py" > "$OUT/$name.log" 2>&1
      echo "rc=$?"; grep -E "api_probe|wrote" "$OUT/$name.log"
      "$PY" "$repo/.devkit/tools/scrub-trace.py" "$work/out/$name.sqlite" "$OUT/$name.sqlite" ;;
    queue)  # pinned copies behind one long kernel vs behind thousands of queued ones (a full launch queue?)
      apis="--apis torch-async-pinned,drv-async-pinned,torch-async-pageable --backlog-ms 200"
      for k in 1 4096; do clean "$PY" "$work/src/workloads/api_probe.py" $apis --kernels $k | tee -a "$OUT/queue-host.txt"; done
      profile --name api-probe-queue --no-variants --sample none --cudabacktrace none \
        "$work/src/workloads/api_probe.py" -- $apis --kernels 4096 > "$OUT/api-probe-queue.log" 2>&1; echo "rc=$?"; grep -E "api_probe|wrote" "$OUT/api-probe-queue.log"
      "$PY" "$repo/.devkit/tools/scrub-trace.py" "$work/out/api-probe-queue.sqlite" "$OUT/api-probe-queue.sqlite" ;;
    sites-sampled)  # issue 58: qwen3vl (QWEN_VARIANTS, default before after) with the copy hook AND Python/CUDA
      # backtraces in one run each (~165 s a variant on an H100), as tests/data/h100/sites/ holds for before
      for v in ${QWEN_VARIANTS:-before after}; do
        profile --python-backtrace --no-variants --name qwen3vl-$v-sampled "$work/src/workloads/qwen3vl.py" -- --variant $v \
          > "$OUT/qwen3vl-$v-sampled.log" 2>&1; echo "rc=$?"
        "$PY" "$repo/.devkit/tools/scrub-trace.py" "$work/out/qwen3vl-$v-sampled.sqlite" "$OUT/qwen3vl-$v-sampled.sqlite"; done ;;
    check)  # the runtime checker: its verdicts vs host timers, then one qwen3vl run under it and nsys at once
      clean "$PY" "$work/src/workloads/runtime_check_probe.py" --json "$OUT/runtime-check.json" | tee "$OUT/runtime-check.txt"
      profile --python-backtrace --no-variants --name qwen3vl-check -- "$PY" -m nsysh2d.cli check --format json \
        -o "$work/out/qwen3vl-check.json" -- "$work/src/workloads/qwen3vl.py" --variant before \
        > "$OUT/qwen3vl-check.log" 2>&1; echo "rc=$?"; tail -3 "$OUT/qwen3vl-check.log"
      cp "$work/out/qwen3vl-check.json" "$OUT/"
      "$PY" "$repo/.devkit/tools/scrub-trace.py" "$work/out/qwen3vl-check.sqlite" "$OUT/qwen3vl-check.sqlite" ;;
    train)  # workloads/train_loop.py: calibrate the GPU work, 5 host-timed runs per variant (alternating), traces
      depth=$(clean "$PY" "$work/src/workloads/train_loop.py" --calibrate | tee -a "$OUT/train-host.txt" | sed -n 's/.* depth=\([0-9]*\).*/\1/p')
      for r in 1 2 3 4 5; do for v in before after; do
        clean "$PY" "$work/src/workloads/train_loop.py" --variant $v --depth "$depth" --steps ${TRAIN_STEPS:-100} \
          --json "$work/out/train-$v-$r.json" | tee -a "$OUT/train-host.txt"; done; done
      "$PY" -c 'import json,sys; print(json.dumps([json.load(open(f)) for f in sys.argv[1:]]))' "$work/out"/train-*-?.json > "$OUT/train-host.json"
      profile --name train-loop --sample none --cudabacktrace none "$work/src/workloads/train_loop.py" -- --depth "$depth" --steps 30 \
        > "$OUT/train-trace.log" 2>&1; echo "rc=$?"; grep -E "train_loop|wrote" "$OUT/train-trace.log"
      for v in before after; do "$PY" "$repo/.devkit/tools/scrub-trace.py" "$work/out/train-loop-$v.sqlite" "$OUT/train-loop-$v.sqlite"; done ;;
    d2h)  # workloads/d2h_probe.py: host timer, then a trace with CUDA backtraces (the strided destination's evidence)
      clean "$PY" "$work/src/workloads/d2h_probe.py" --json "$OUT/d2h-host.json" | tee "$OUT/d2h-host.txt"
      profile --name d2h-probe --no-variants --sample none "$work/src/workloads/d2h_probe.py" > "$OUT/d2h-trace.log" 2>&1
      echo "rc=$?"; grep -E "d2h_probe|wrote" "$OUT/d2h-trace.log"
      "$PY" "$repo/.devkit/tools/scrub-trace.py" "$work/out/d2h-probe.sqlite" "$OUT/d2h-probe.sqlite" ;;
    qwen-variants)  # issue 43: before/after/uva in separate processes, alternating, then the digest check in one process
      for r in $(seq ${ROUNDS:-3}); do for v in ${VARIANTS:-before after uva staged}; do
        clean "$PY" "$work/src/workloads/qwen3vl.py" --variant $v $QWEN_ARGS --json "$OUT/qwen-$v-$r.json" \
          | grep -E "steps=|site|wall|digest" | tee -a "$OUT/qwen-variants.txt"; done; done
      clean "$PY" "$work/src/workloads/qwen3vl.py" --check-identical --repeats ${REPEATS:-2} $QWEN_ARGS \
        --json "$OUT/qwen-identical.json" | grep -E "digest|identical|differs|device" | tee "$OUT/qwen-identical.txt" ;;
    qwen-uva-host)  # issue 43: uva runs alone (separate processes), after qwen-variants
      for r in $(seq ${ROUNDS:-3}); do clean "$PY" "$work/src/workloads/qwen3vl.py" --variant uva $QWEN_ARGS \
        --json "$OUT/qwen-uva-$r.json" | grep -E "steps=|site|wall|digest" | tee -a "$OUT/qwen-uva-host.txt"; done ;;
    qwen-uva-trace)  # issue 43: the uva variant under nsys (cuda+nvtx, no sampling: no copy at the site to attribute)
      profile --name qwen3vl --variants uva --sample none --cudabacktrace none "$work/src/workloads/qwen3vl.py" \
        > "$OUT/qwen-uva-trace.log" 2>&1; echo "rc=$?"; grep -E "^\[|wrote" "$OUT/qwen-uva-trace.log" | tail -8
      "$PY" "$repo/.devkit/tools/scrub-trace.py" "$work/out/qwen3vl-uva.sqlite" "$OUT/qwen3vl-uva.sqlite" ;;
    capture-cost)  # issue 42: size and time of each capture setting on qwen3vl, and what evidence each keeps
      for spec in ${COST_SPECS:-default:--sample=process-tree:--cudabacktrace=memory}; do
        label=${spec%%:*}; opts=$(echo "${spec#*:}" | tr ':' ' ')
        rm -f "$work/out/cost-$label".*; t0=$(date +%s.%N)
        clean timeout ${COST_TIMEOUT:-240} "$NSYS" profile --trace=cuda,nvtx --cpuctxsw=none $opts -o "$work/out/cost-$label" \
          -f true "$PY" "$work/src/workloads/qwen3vl.py" --variant before $QWEN_ARGS > "$OUT/cost-$label.log" 2>&1
        rc=$?; t1=$(date +%s.%N)
        q=$(stat -c %s "$work/out/cost-$label.qdstrm" 2>/dev/null || echo 0)
        if [ ! -f "$work/out/cost-$label.nsys-rep" ] && [ -f "$work/out/cost-$label.qdstrm" ]; then
          (LD_LIBRARY_PATH=$work/devkit:${LD_LIBRARY_PATH:-} timeout 240 "$(dirname "$NSYS")/../linux-desktop-glibc_2_11_3-x64/QdstrmImporter" \
            -i "$work/out/cost-$label.qdstrm" >> "$OUT/cost-$label.log" 2>&1); fi
        t2=$(date +%s.%N)
        "$NSYS" export --type sqlite -o "$work/out/cost-$label.sqlite" -f true "$work/out/cost-$label.nsys-rep" >> "$OUT/cost-$label.log" 2>&1
        t3=$(date +%s.%N)
        r=$(stat -c %s "$work/out/cost-$label.nsys-rep" 2>/dev/null || echo 0); sq=$(stat -c %s "$work/out/cost-$label.sqlite" 2>/dev/null || echo 0)
        ev=$("$PY" "$repo/scripts/capture-evidence.py" "$work/out/cost-$label.sqlite" 2>&1)
        echo "$label rc=$rc opts='$opts' $(awk -v a=$t0 -v b=$t1 -v c=$t2 -v d=$t3 'BEGIN{printf "profile_s=%.1f import_s=%.1f export_s=%.1f", b-a, c-b, d-c}') qdstrm=$q rep=$r sqlite=$sq $ev" | tee -a "$OUT/capture-cost.txt"
        grep -E "^\[before\] (steps|site)" "$OUT/cost-$label.log" | sed "s/^/  $label /" | tee -a "$OUT/capture-cost.txt"
        [ "$sq" -lt 6000000 ] && [ "$sq" -gt 0 ] && "$PY" "$repo/.devkit/tools/scrub-trace.py" "$work/out/cost-$label.sqlite" "$OUT/cost-$label.sqlite"
        rm -f "$work/out/cost-$label".*
      done ;;
    queue-depth)  # issue 40: the launch queue's depth from per-launch host times, and what a full queue makes wait
      gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-')
      clean "$PY" "$work/src/workloads/launch_queue.py" --json "$OUT/queue-depth-$gpu.json" | tee "$OUT/queue-depth-$gpu.txt"
      clean "$PY" "$work/src/workloads/launch_queue.py" --fill-with pinned_copies --kernels 8192 \
        --json "$OUT/queue-depth-copies-$gpu.json" | tee "$OUT/queue-depth-copies-$gpu.txt" ;;
    bisect)  # issue 40: the pageable threshold to 64 KiB, for 1/2/4 copies in flight and three backlogs
      gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-')
      sizes=$(python3 -c 'print(",".join(str(k * 65536) for k in range(1, 65)))')
      clean "$PY" "$work/src/workloads/h2d_sweep.py" --sizes "$sizes" --variants pageable,numpy_from,pinned_strided \
        --backlogs-ms 2,10,50 --inflight 1,2,4 --repeats ${BISECT_REPEATS:-3} --json "$OUT/bisect-$gpu.json" \
        > "$OUT/bisect-$gpu.txt" 2>&1; echo "rc=$?"; tail -3 "$OUT/bisect-$gpu.txt" ;;
    causes)  # issue 40: each cause of a long call alone (workloads/cause_probe.py): host timers, then the same under nsys
      gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-')
      clean "$PY" "$work/src/workloads/cause_probe.py" --json "$OUT/causes-host-$gpu.json" | tee "$OUT/causes-host-$gpu.txt"
      profile --name cause-probe --no-variants --sample none --cudabacktrace none "$work/src/workloads/cause_probe.py" \
        -- --json "$work/out/causes-trace.json" > "$OUT/causes-trace.log" 2>&1; echo "rc=$?"; grep -E "cause_probe|wrote" "$OUT/causes-trace.log" | tail -8
      cp "$work/out/causes-trace.json" "$OUT/causes-trace-$gpu.json"
      "$PY" "$repo/.devkit/tools/scrub-trace.py" "$work/out/cause-probe.sqlite" "$OUT/cause-probe-$gpu.sqlite" ;;
    two-proc)  # issue 41: two processes share the GPU (train_loop before and after at once): host timers, then one
      # nsys report of both, then torch.profiler: one Kineto file per process
      tl="$work/src/workloads/train_loop.py"; a="--steps ${TWO_STEPS:-20}"
      pair() { echo "$PY $tl --variant before $a --json $work/out/two-$1-before.json & $PY $tl --variant after $a --json $work/out/two-$1-after.json & wait"; }
      clean bash -c "$(pair host)" | tee "$OUT/two-proc-host.txt"
      profile --name two-proc --no-variants --sample none --cudabacktrace none -- bash -c "$(pair nsys)" \
        > "$OUT/two-proc-trace.log" 2>&1; echo "rc=$?"; grep -E "wrote|steps" "$OUT/two-proc-trace.log" | tail -6
      "$PY" "$repo/.devkit/tools/scrub-trace.py" "$work/out/two-proc.sqlite" "$OUT/two-proc.sqlite"
      k="$PY -m nsysh2d.capture.torch_profile -o $work/out/two-proc"
      clean bash -c "$k-before.pt.trace.json.gz $tl --variant before $a --json $work/out/two-kineto-before.json & \
        $k-after.pt.trace.json.gz $tl --variant after $a --json $work/out/two-kineto-after.json & wait" > "$OUT/two-proc-kineto.log" 2>&1
      echo "rc=$?"; tail -3 "$OUT/two-proc-kineto.log"
      cp "$work/out"/two-*.json "$work/out"/two-proc-*.pt.trace.json.gz "$OUT/" ;;
    tp)  # issue 41: two ranks on two GPUs (workloads/tp_pair.py: NCCL all-reduces, the qwen3vl input path), per
      # variant: host timers, one nsys report of both ranks, one torch.profiler file per rank (needs 2+ GPUs)
      # (TP_WORLD=1 runs the same stage on one GPU: a check of the capture, with no collective to wait for)
      n=$(nvidia-smi -L | wc -l); w=${TP_WORLD:-2}
      if [ "$n" -lt "$w" ]; then echo "tp: needs $w GPUs, this host has $n"; continue; fi
      tp="$work/src/workloads/tp_pair.py"; a="--world $w ${TP_ARGS:---imbalance-ms 5 --input-tokens 131072}"
      for v in ${TP_VARIANTS:-before after}; do
        clean "$PY" "$tp" --variant $v $a --json-dir "$work/out/tp-host" | tee -a "$OUT/tp-host.txt"
        profile --name tp-$v --no-variants --sample none --cudabacktrace none "$tp" -- --variant $v $a \
          --json-dir "$work/out/tp-nsys" > "$OUT/tp-$v-trace.log" 2>&1; echo "rc=$?"; grep -E "tp_pair|wrote" "$OUT/tp-$v-trace.log"
        "$PY" "$repo/.devkit/tools/scrub-trace.py" "$work/out/tp-$v.sqlite" "$OUT/tp-$v.sqlite"
        clean "$PY" "$tp" --variant $v $a --json-dir "$work/out/tp-kineto" \
          --wrap "$PY -m nsysh2d.capture.torch_profile -o $work/out/tp-$v-rank{rank}.pt.trace.json.gz" > "$OUT/tp-$v-kineto.log" 2>&1
        echo "rc=$?"; grep tp_pair "$OUT/tp-$v-kineto.log"
      done
      cp -r "$work/out"/tp-host "$work/out"/tp-nsys "$work/out"/tp-kineto "$work/out"/tp-*.pt.trace.json.gz "$OUT/" ;;
    rewrites)  # issue 40: the runtime checker's in-flight write rule against what the GPU read
      gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-')
      clean "$PY" "$work/src/workloads/runtime_check_probe.py" --rewrites --json "$OUT/rewrites-$gpu.json" | tee "$OUT/rewrites-$gpu.txt" ;;
  esac
done
ls -la "$OUT" "$work/out"
