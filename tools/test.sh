#!/usr/bin/env bash
# The README's test command: installs what is missing,
# builds with warnings as errors under
# AddressSanitizer + UndefinedBehaviorSanitizer, and runs every test suite (ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
build_dir=${MEMPLAN_TEST_BUILD_DIR:-build-asan}
jobs=$(nproc)
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMEMPLAN_WERROR=ON \
      -DMEMPLAN_SANITIZE=ON -DCMAKE_CXX_FLAGS="-O1" >/dev/null
cmake --build "$build_dir" -j "$jobs"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs"
