#!/usr/bin/env bash
# The README's test command: installs what is missing, checks the formatting (tools/check_format.sh),
# builds with warnings as errors under
# AddressSanitizer + UndefinedBehaviorSanitizer, runs every test suite (ctest), then runs each
# libFuzzer target for MEMPLAN_FUZZ_SECONDS from its seed corpus (default 0 = skipped: the clang
# fuzz build does not fit in the CI time budget beside the sanitizer build; tools/fuzz.sh runs them).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/check_format.sh
tools/check_test_names.sh
build_dir=${MEMPLAN_TEST_BUILD_DIR:-build-asan}
jobs=$(nproc)
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMEMPLAN_WERROR=ON \
      -DMEMPLAN_SANITIZE=ON -DCMAKE_CXX_FLAGS="-O1" >/dev/null
cmake --build "$build_dir" -j "$jobs"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs"
fuzz_seconds=${MEMPLAN_FUZZ_SECONDS:-0}
if [ "$fuzz_seconds" != 0 ]; then
  ZOO_DIR="$build_dir/zoo" JOBS="$jobs" tools/fuzz.sh "$fuzz_seconds"
fi
