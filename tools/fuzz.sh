#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang + ASan/UBSan) in build-fuzz and runs each for
# SECONDS (default 60) from the seed corpus. A crash, sanitizer report, leak or timeout exits 1
# with the reproducer's path and its base64 bytes printed.
# Usage: tools/fuzz.sh [SECONDS] [TARGET...]   (targets: fuzz_import fuzz_plan_json
#        fuzz_baseline fuzz_profile fuzz_export fuzz_snapshot fuzz_verify_plan; default all). JOBS=n sets the build's parallelism (default 2).
#        FUZZ_BUILD_DIR=dir uses an existing build configured with MEMPLAN_FUZZ=ON (tools/test.sh
#        passes its sanitizer build, which has the targets) instead of build-fuzz.
# Needs clang++ and libFuzzer (Debian 12: clang and libclang-rt-14-dev, see tools/setup.sh).
set -euo pipefail
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(fuzz_import fuzz_plan_json fuzz_baseline fuzz_profile fuzz_export fuzz_snapshot fuzz_verify_plan)
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
cxx=${CXX:-clang++}
command -v "$cxx" >/dev/null || { echo "fuzz.sh: $cxx not found (tools/setup.sh clang libclang-rt-14-dev)"; exit 2; }

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DCMAKE_CXX_COMPILER="$cxx" -DMEMPLAN_FUZZ=ON -DMEMPLAN_BUILD_TESTS=OFF -DMEMPLAN_CUDA=OFF \
    >/dev/null
fi
# Zoo models seed the import target: taken from a dev build when there is one, else generated.
zoo=${ZOO_DIR:-$root/build-dev/zoo}
if [ ! -d "$zoo" ]; then
  cmake --build "$build" -j"${JOBS:-2}" --target zoo_models
  zoo=$build/zoo
fi
cmake --build "$build" -j"${JOBS:-2}" --target "${targets[@]}"

corpus=$build/corpus
"$root/tests/fuzz/make_seed_corpus.sh" "$build/seeds" "$zoo" >/dev/null
status=0
for target in "${targets[@]}"; do
  seeds=$build/seeds/${target#fuzz_}
  work=$corpus/${target#fuzz_}
  artifacts=$build/artifacts/${target#fuzz_}/
  mkdir -p "$work" "$artifacts"
  log=$build/$target.log
  echo "== $target: ${seconds}s"
  if "$build/tests/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
      -max_len=400000 -artifact_prefix="$artifacts" -print_final_stats=1 \
      "$work" "$seeds" >"$log" 2>&1; then
    grep -E '^#[0-9]+.*(DONE|pulse|NEW|REDUCE)' "$log" | tail -1 || true
    grep -E 'stat::number_of_executed_units' "$log" || true
  else
    status=1
    echo "$target FAILED; log: $log"
    grep -E 'ERROR: |SUMMARY: |runtime error' "$log" | head -5 || true
    for crash in "$artifacts"*; do
      [ -f "$crash" ] || continue
      echo "reproducer: $crash  (run: $build/tests/fuzz/$target $crash)"
      echo "reproducer base64: $(base64 -w0 "$crash" | head -c 4000)"
    done
  fi
done
exit $status
