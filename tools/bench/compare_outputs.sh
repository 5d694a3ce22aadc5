#!/usr/bin/env bash
# compare_outputs.sh OLD_MEMPLAN NEW_MEMPLAN ZOO_DIR [WORK_DIR]
# A refactor must not change what memplan prints: runs the same commands with both binaries
# (inspect and analyze of every zoo model and tests/fixtures model in six configurations, the
# checked-in plans exported to six targets) and compares the outputs byte for byte, build paths
# normalised. Prints the files that differ and "compared N files, D differ"; exit 1 when D > 0.
set -u
old=$1 new=$2 zoo=$3 work=${4:-$(mktemp -d)}
fixtures=$(cd "$(dirname "$0")/../../tests/fixtures" && pwd)

capture() {
  local memplan=$1 out=$2
  mkdir -p "$out"
  run() {
    local name=$1; shift
    "$memplan" "$@" > "$out/$name.out" 2> "$out/$name.err"
    echo "rc=$?" >> "$out/$name.err"
  }
  for m in "$zoo"/*.onnx "$fixtures"/*.onnx; do
    local b; b=$(basename "$(dirname "$m")")_$(basename "$m" .onnx)
    run "$b.inspect" inspect "$m"
    run "$b.a24" analyze "$m" --gpu 24G
    run "$b.a24j" analyze "$m" --gpu 24G --json
  done
  for m in "$zoo"/*.onnx; do
    local b; b=$(basename "$m" .onnx)
    run "$b.bf16" analyze "$m" --gpu A100-80GB --precision bf16 --global-batch 64 --json
    run "$b.rc" analyze "$m" --gpu 16G --recompute all --optimizer sgd
    run "$b.h100" analyze "$m" --gpu H100 --global-batch 256
  done
  for p in "$fixtures"/plans/*.json; do
    local b; b=$(basename "$p" .json)
    for t in pytorch torchrun hf-trainer accelerate lightning deepspeed; do
      run "plan_$b.$t" export "$p" --to "$t"
    done
  done
}

capture "$old" "$work/old"
capture "$new" "$work/new"
normalise() { sed -E 's#/[^ "]*/build[^/ "]*/#BUILD/#g' "$1"; }
n=0 d=0
for f in $(cd "$work/old" && ls); do
  n=$((n + 1))
  if ! cmp -s <(normalise "$work/old/$f") <(normalise "$work/new/$f"); then
    d=$((d + 1))
    echo "differs: $f"
  fi
done
echo "compared $n files, $d differ"
[ "$d" -eq 0 ]
