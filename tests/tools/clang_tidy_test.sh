#!/bin/sh
# tools/run_clang_tidy.py on a scratch tree: a function of 90 lines fails (readability-function-size
# at 80, .clang-tidy) unless the baseline names it, the same function at 40 lines passes but fails
# while the baseline still names it (the ratchet), and a source checked before is read from the
# cache. Exit 77 (skip) without clang-tidy.
# Usage: clang_tidy_test.sh SOURCE_DIR WORK_DIR
set -eu
source_dir=$1
work=$2
command -v clang-tidy-14 >/dev/null 2>&1 || command -v clang-tidy >/dev/null 2>&1 || exit 77
rm -rf "$work"
mkdir -p "$work/tree/tools" "$work/tree/analyzer"
cp "$source_dir/.clang-tidy" "$work/tree/"
cp "$source_dir/tools/run_clang_tidy.py" "$work/tree/tools/"
cat > "$work/tree/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(tidy_scratch CXX)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
add_library(scratch STATIC analyzer/long.cc)
CMAKE

# A function whose body has $1 statement lines.
write_function() {
  {
    echo "int Long(int x) {"
    i=0
    while [ "$i" -lt "$1" ]; do
      echo "  x = x * 3 + $i;"
      i=$((i + 1))
    done
    echo "  return x;"
    echo "}"
  } > "$work/tree/analyzer/long.cc"
}

export MEMPLAN_TIDY_CACHE="$work/cache"
write_function 90
cmake -S "$work/tree" -B "$work/tree/build" -G Ninja >/dev/null
cmake --build "$work/tree/build" >/dev/null
if python3 "$work/tree/tools/run_clang_tidy.py" "$work/tree/build" > "$work/long.out" 2>&1; then
  echo "FAIL: a 90-line function passed"; cat "$work/long.out"; exit 1
fi
grep -q "analyzer/long.cc:1:.*readability-function-size" "$work/long.out" ||
  { echo "FAIL: no function-size warning"; cat "$work/long.out"; exit 1; }

# The ratchet: a known warning passes, and once fixed its baseline line must go.
tidy="python3 $work/tree/tools/run_clang_tidy.py $work/tree/build --baseline $work/baseline.txt"
$tidy --update-baseline > /dev/null 2>&1
grep -q "^analyzer/long.cc | readability-function-size | function 'Long'" "$work/baseline.txt" ||
  { echo "FAIL: the baseline lacks the warning"; cat "$work/baseline.txt"; exit 1; }
$tidy > "$work/known.out" 2>&1 || { echo "FAIL: a known warning failed"; cat "$work/known.out"; exit 1; }

write_function 40
cmake --build "$work/tree/build" >/dev/null
if $tidy > "$work/stale.out" 2>&1; then
  echo "FAIL: a fixed warning left in the baseline passed"; cat "$work/stale.out"; exit 1
fi
grep -q "fixed, delete this line" "$work/stale.out" ||
  { echo "FAIL: the stale line is not named"; cat "$work/stale.out"; exit 1; }
python3 "$work/tree/tools/run_clang_tidy.py" "$work/tree/build" > "$work/short.out" 2>&1 ||
  { echo "FAIL: a 40-line function failed"; cat "$work/short.out"; exit 1; }
grep -q "0 checked now, 1 from the cache" "$work/short.out" ||
  { echo "FAIL: the source was parsed again"; cat "$work/short.out"; exit 1; }

echo "clang_tidy_test: ok"
