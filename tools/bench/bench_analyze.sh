#!/usr/bin/env bash
# Prints wall times of memplan's main jobs on the zoo (best of 5 runs each), for
# docs/measurements.md. Usage: tools/bench/bench_analyze.sh [build-dir]  (a Release build).
set -euo pipefail
build=${1:-build}
memplan=$build/tools/memplan
zoo=$build/zoo
best_of() {
  local best=""
  for _ in 1 2 3 4 5; do
    local start end
    start=$(date +%s.%N)
    "$@" >/dev/null || [ $? -eq 1 ]
    end=$(date +%s.%N)
    local t
    t=$(echo "$end - $start" | bc)
    if [ -z "$best" ] || [ "$(echo "$t < $best" | bc)" = 1 ]; then best=$t; fi
  done
  printf "%8.3f s  %s\n" "$best" "$*"
}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
best_of "$memplan" inspect "$zoo/gpt2_xl.onnx"
best_of "$memplan" inspect "$zoo/gpt2_xl.onnx" --json
best_of "$memplan" analyze "$zoo/resnet50.onnx" --gpu 24G
best_of "$memplan" analyze "$zoo/gpt2_xl.onnx" --gpu 80GB --dim seq=1024
best_of "$memplan" analyze "$zoo/gpt2_xl.onnx" --gpu 80GB --dim seq=1024 --recompute auto --precision auto
