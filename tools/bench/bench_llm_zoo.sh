#!/usr/bin/env bash
# Times `memplan analyze` on the LLM-size zoo entries at seq 4096 on a 24 GB card with every
# knob on auto (precision, recompute, attention, batch search), best of 3 runs, for
# docs/measurements.md (issue 11: the target is under 2 s CPU). Usage:
#   tools/bench/bench_llm_zoo.sh [build-dir]     (a Release build: cmake -DCMAKE_BUILD_TYPE=Release)
set -euo pipefail
build=${1:-build}
memplan=$build/tools/memplan
zoo=$build/zoo
runs=3
timing=$(mktemp)
trap 'rm -f "$timing"' EXIT
# Best of $runs: wall seconds and CPU seconds (user + sys); memplan is single-threaded, so on a
# shared machine the CPU figure is what an idle machine's wall time would be. The exit code is
# printed too (1 = does not fit, which is an answer, not a failure of the run).
# shellcheck source=tools/bench/best_of.sh
. "$(dirname "$0")/best_of.sh"
best_of() {
  time_best_of "$runs" "$@"
  printf "%8.3f s wall  %8.3f s cpu  exit %d  %s\n" "$best_wall" "$best_cpu" "$rc" "${*#"$build"/}"
}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
for model in llama3_8b mistral_7b; do
  best_of "$memplan" inspect "$zoo/$model.onnx" --json
  best_of "$memplan" analyze "$zoo/$model.onnx" --gpu 24G --dim seq=4096
  best_of "$memplan" analyze "$zoo/$model.onnx" --gpu 24G --dim seq=4096 --lora 16 --base-dtype nf4
done
