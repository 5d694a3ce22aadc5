#!/usr/bin/env bash
# Builds the fuzzers' seed corpora from the checked-in fixtures and, when given, a folder of
# generated zoo models (the zoo_models target writes them to <build>/zoo).
# Usage: tests/fuzz/make_seed_corpus.sh OUT_DIR [ZOO_DIR]
# Writes OUT_DIR/{import,plan_json,baseline,profile,export,snapshot,verify_plan}; models over 300 KB are left out (each
# execution would take too long to explore well).
set -euo pipefail
out=${1:?usage: make_seed_corpus.sh OUT_DIR [ZOO_DIR]}
zoo=${2:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
fixtures=$root/tests/fixtures
mkdir -p "$out"/{import,plan_json,baseline,profile,export,snapshot,verify_plan}

small() { [ "$(stat -c %s "$1")" -le 300000 ]; }
for model in "$fixtures"/*.onnx ${zoo:+"$zoo"/*.onnx}; do
  [ -f "$model" ] && small "$model" && cp "$model" "$out/import/"
done
cp "$fixtures"/plans/*.json "$out/plan_json/"
# The exporters read the same plans; the hostile ones (wrong types, 1e999) seed the error paths.
cp "$fixtures"/plans/*.json "$fixtures"/plans/hostile/*.json "$out/export/"
# verify --plan reads them too (tests/fuzz/fuzz_verify_plan.cc).
cp "$fixtures"/plans/*.json "$fixtures"/plans/hostile/*.json "$out/verify_plan/"
cp "$fixtures"/ci_check/*.json "$out/baseline/"
cp "$fixtures"/profiles/*.json "$out/profile/"
cp "$fixtures"/snapshots/*.json "$out/snapshot/"
# Baselines are written by `memplan baseline`; any checked-in one seeds the reader too.
find "$fixtures" -name '*baseline*.json' -exec cp {} "$out/baseline/" \;
for dir in import plan_json baseline profile export snapshot verify_plan; do
  echo "seed corpus $dir: $(ls "$out/$dir" | wc -l) files"
done
