#!/usr/bin/env bash
# Times `memplan analyze` of every zoo model on a 24 GB card (the LLMs at their usual sequence
# length, where nothing fits and the alternatives are planned too), best of RUNS runs each, one
# column per binary, for docs/measurements.md (issue 39 item 7: the target is under 0.5 s CPU each).
# Usage: tools/bench/bench_zoo_analyze.sh ZOO_DIR MEMPLAN [MEMPLAN...]   (Release builds)
#   RUNS=5 by default. CPU = user + sys: memplan is single-threaded, so on a shared machine it is
#   what an idle machine's wall time would be. The peak RSS is the best run's.
set -euo pipefail
zoo=$1
shift
runs=${RUNS:-5}
timing=$(mktemp)
trap 'rm -f "$timing"' EXIT
# The best of $runs: least CPU seconds, and that run's peak RSS in MB.
best_cpu() {
  local best="" rss=""
  for _ in $(seq "$runs"); do
    /usr/bin/time -o "$timing" -f "%U %S %M" "$@" >/dev/null 2>&1 || true
    local u s m cpu
    read -r u s m < <(tail -1 "$timing")
    cpu=$(echo "$u + $s" | bc)
    if [ -z "$best" ] || [ "$(echo "$cpu < $best" | bc)" = 1 ]; then
      best=$cpu
      rss=$((m / 1024))
    fi
  done
  printf "%6.2f s %5d MB" "$best" "$rss"
}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "load average $(cut -d' ' -f1 /proc/loadavg)"
jobs=(
  "bert_base.onnx --gpu 24G --dim seq=512"
  "gpt2_small.onnx --gpu 24G --dim seq=1024"
  "gpt2_xl.onnx --gpu 24G --dim seq=1024"
  "gpt2_xl.onnx --gpu 24G --dim seq=1024 --global-batch 64"
  "llama3_8b.onnx --gpu 24G --dim seq=4096"
  "mistral_7b.onnx --gpu 24G --dim seq=4096"
  "mlp.onnx --gpu 24G"
  "resnet18.onnx --gpu 24G"
  "resnet50.onnx --gpu 24G"
  "vit_b16.onnx --gpu 24G"
)
for job in "${jobs[@]}"; do
  read -r -a words <<<"$job"
  line=""
  for memplan in "$@"; do
    line+="$(best_cpu "$memplan" analyze "$zoo/${words[0]}" "${words[@]:1}")   "
  done
  echo "$line analyze $job"
done
