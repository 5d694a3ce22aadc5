# Sourced by the export test scripts (tests/export/*_test.sh): the Python they run (PYTHON
# overrides /usr/bin/python3), fail(), the skip when that Python or torch is missing (exit 77,
# which ctest reports as skipped: CI has no torch) and a fresh work directory.
python=${PYTHON:-/usr/bin/python3}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Skips the test unless $python exists (and, with "torch", imports torch).
require_python() {
  [ -x "$python" ] || { echo "SKIP: $python not found"; exit 77; }
  if [ "${1:-}" = torch ]; then
    "$python" -c 'import torch' 2>/dev/null || { echo "SKIP: $python has no torch"; exit 77; }
  fi
}

# An empty directory $1 (removed first if it exists).
fresh_dir() {
  rm -rf "$1"
  mkdir -p "$1" || fail "cannot create $1"
}
