#!/usr/bin/env bash
# Prints the CPU time (user + sys) and wall time of `memplan verify` on the zoo ResNet-18 at
# batch 4 on the CPU reference backend, with the machine named, for docs/measurements.md.
# Usage: tools/bench/bench_verify_cpu.sh [build-dir] [runs]   (a Release build; default build, 3)
# MEMPLAN_CPU_THREADS sets the CPU backend's thread count (default: the machine's threads, <= 8).
set -euo pipefail
build=${1:-build}
runs=${2:-3}
memplan=$build/tools/memplan
model=$build/zoo/resnet18.onnx
for f in "$memplan" "$model"; do
  [ -e "$f" ] || { echo "bench_verify_cpu: $f is missing (build targets memplan and zoo_models)" >&2; exit 2; }
done
timing=$(mktemp)
trap 'rm -f "$timing"' EXIT
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "load average $(cut -d' ' -f1 /proc/loadavg)"
echo "threads: ${MEMPLAN_CPU_THREADS:-default}"
echo "command: memplan verify resnet18.onnx --batch 4"
# Best of `runs`: on a shared machine the least disturbed run is the closest to an idle one.
best_wall="" best_cpu=""
for _ in $(seq "$runs"); do
  status=0
  /usr/bin/time -o "$timing" -f "%e %U %S" "$memplan" verify "$model" --batch 4 >/dev/null 2>&1 ||
    status=$?
  [ "$status" -eq 0 ] || { echo "bench_verify_cpu: verify exited $status" >&2; exit 1; }
  read -r wall user sys < <(tail -1 "$timing")
  cpu=$(echo "$user + $sys" | bc)
  printf "run: %8.2f s cpu (user %.2f + sys %.2f)  %8.2f s wall\n" "$cpu" "$user" "$sys" "$wall"
  if [ -z "$best_wall" ] || [ "$(echo "$wall < $best_wall" | bc)" = 1 ]; then best_wall=$wall; fi
  if [ -z "$best_cpu" ] || [ "$(echo "$cpu < $best_cpu" | bc)" = 1 ]; then best_cpu=$cpu; fi
done
printf "best: %8.2f s cpu  %8.2f s wall\n" "$best_cpu" "$best_wall"
