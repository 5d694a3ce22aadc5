#!/usr/bin/env bash
# `inspect` time and peak memory on a model with its weights inline (issue 9: import bounded by
# the graph, not the weights), for docs/measurements.md.
#   tools/bench/bench_inline_import.sh [build-dir] [baseline-memplan]
# Inlines the zoo's GPT-2 small (124 M parameters, ~510 MB of float32 weights) with
# tools/bench/make_inline_model.py, then runs `memplan inspect` on it three times with each binary
# (this build's, and a baseline binary such as an older build's when given) and prints each run's
# wall, CPU (user + sys) seconds and peak resident memory (GNU time's %M).
set -euo pipefail
build=${1:-build}
baseline=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
model=$work/gpt2_small_inline.onnx
python3 "$here/make_inline_model.py" "$build/zoo/gpt2_small.onnx" "$model"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "$(free -g | awk '/Mem:/ {print $2}') GiB RAM; model $(stat -c %s "$model") bytes"
run() {
  local label=$1 binary=$2
  for _ in 1 2 3; do
    /usr/bin/time -o "$work/time" -f "%e %U %S %M" "$binary" inspect "$model" >/dev/null
    awk -v l="$label" '{printf "%-9s %7.2f s wall %6.2f s cpu %8.1f MB peak RSS\n", l, $1, $2 + $3, $4 / 1024}' \
      "$work/time"
  done
}
[ -n "$baseline" ] && run baseline "$baseline"
run this "$build/tools/memplan"
