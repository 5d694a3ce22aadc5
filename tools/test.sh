#!/usr/bin/env bash
# The README's test command: installs what is missing, checks the formatting (tools/check_format.sh),
# builds with warnings as errors under AddressSanitizer + UndefinedBehaviorSanitizer, runs clang-tidy
# against its baseline (tools/run_clang_tidy.py), runs every
# test suite (ctest), then runs each libFuzzer target (tests/fuzz) for MEMPLAN_FUZZ_SECONDS
# (default 60; 0 skips) from its seed corpus; a crash fails with the reproducer printed.
# One build serves both: clang with the fuzzer's coverage instrumentation on every library
# (MEMPLAN_FUZZ), so the fuzz targets cost no second build. Without clang (setup.sh installs it)
# the suite builds with the default compiler and the fuzzers are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/check_format.sh
tools/check_test_names.sh
tools/check_stage_includes.py
tools/check_op_facts.py
build_dir=${MEMPLAN_TEST_BUILD_DIR:-build-asan}
jobs=$(nproc)
fuzz_seconds=${MEMPLAN_FUZZ_SECONDS:-60}
compiler=()
if command -v clang++ >/dev/null; then
  compiler=(-DCMAKE_CXX_COMPILER="$(command -v clang++)" -DMEMPLAN_FUZZ=ON)
else
  echo "test.sh: no clang++ - building with the default compiler, fuzzers skipped"
  fuzz_seconds=0
fi
# A build folder configured with another compiler cannot be switched in place.
cached=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)
if [ -n "$cached" ] && [ "$cached" != "$(command -v clang++ || true)" ] && [ ${#compiler[@]} -gt 0 ]; then
  rm -rf "$build_dir"
fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMEMPLAN_WERROR=ON \
      -DMEMPLAN_SANITIZE=ON -DCMAKE_CXX_FLAGS="-O1" "${compiler[@]}" >/dev/null
cmake --build "$build_dir" -j "$jobs"
# clang-tidy (.clang-tidy) over analyzer/, graph/, runtime/, profiler/ and tools/, cached per source
# as ccache caches objects: a warning not in tools/clang_tidy_baseline.txt fails, and so does a
# baseline line no warning matches any more (the list only shrinks). A cold cache is worked through
# MEMPLAN_TIDY_SECONDS at a time (the sources left are named and checked by the next run).
MEMPLAN_TIDY_SECONDS=${MEMPLAN_TIDY_SECONDS:-300} python3 tools/run_clang_tidy.py "$build_dir" \
  --jobs "$jobs" --baseline tools/clang_tidy_baseline.txt
# OpenBLAS picks its kernels from the CPU's model name (DYNAMIC_ARCH): a VM that reports a generic
# "Intel Xeon Processor" gets the SSE3 Prescott kernels, whose sgemm rounds differently from the
# AVX2 / AVX-512 ones, and verify's split-batch gradient check of a cancelling sum (verify set:
# binary_pow, 1.57e-5 against its bound 1e-5 on Prescott, 2.9e-6 on Haswell to Cooperlake) then
# depends on the model string. Where the CPU has AVX2 and FMA, the Haswell kernels are pinned so
# the suite's numbers are the same on every such machine.
if [ -z "${OPENBLAS_CORETYPE:-}" ] && grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
  export OPENBLAS_CORETYPE=Haswell
fi
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs"
if [ "$fuzz_seconds" != 0 ]; then
  FUZZ_BUILD_DIR="$build_dir" ZOO_DIR="$build_dir/zoo" JOBS="$jobs" tools/fuzz.sh "$fuzz_seconds"
fi
