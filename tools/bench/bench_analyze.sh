#!/usr/bin/env bash
# Prints wall times of memplan's main jobs on the zoo (best of 5 runs each), for
# docs/measurements.md. Usage: tools/bench/bench_analyze.sh [build-dir]  (a Release build).
set -euo pipefail
build=${1:-build}
memplan=$build/tools/memplan
zoo=$build/zoo
# Best of 5 runs: wall seconds and CPU seconds (user + sys). memplan is single-threaded, so on a
# busy machine the CPU figure is what an idle machine's wall time would be.
timing=$(mktemp)
trap 'rm -f "$timing"' EXIT
# shellcheck source=tools/bench/best_of.sh
. "$(dirname "$0")/best_of.sh"
best_of() {
  time_best_of 5 "$@"
  printf "%8.3f s wall  %8.3f s cpu  %s\n" "$best_wall" "$best_cpu" "${*#"$build"/}"
}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
best_of "$memplan" inspect "$zoo/gpt2_xl.onnx"
best_of "$memplan" inspect "$zoo/gpt2_xl.onnx" --json
best_of "$memplan" analyze "$zoo/resnet50.onnx" --gpu 24G --precision fp32 --recompute none
best_of "$memplan" analyze "$zoo/resnet50.onnx" --gpu 24G
best_of "$memplan" analyze "$zoo/gpt2_xl.onnx" --gpu 80GB --dim seq=1024 --precision fp32 --recompute none
best_of "$memplan" analyze "$zoo/gpt2_xl.onnx" --gpu 80GB --dim seq=1024 --recompute auto --precision auto
best_of "$memplan" analyze "$zoo/gpt2_xl.onnx" --gpu 24G --dim seq=1024 --recompute auto --precision auto
best_of "$memplan" analyze "$zoo/gpt2_xl.onnx" --gpu 24G --dim seq=1024 --recompute auto --precision auto --global-batch 64
best_of "$memplan" analyze "$zoo/llama3_8b.onnx" --gpu 24G --dim seq=4096
