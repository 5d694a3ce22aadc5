#!/usr/bin/env bash
# Fails when a tracked C++/CUDA source does not match the repository's .clang-format.
# Run by tools/test.sh (and so by CI); `tools/check_format.sh --fix` rewrites the files in place.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null 2>&1; then
  echo "check_format: clang-format is missing (tools/setup.sh installs it)" >&2
  exit 2
fi
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh' 2>/dev/null || true)
if [ ${#files[@]} -eq 0 ]; then
  # Not a git checkout (e.g. an exported tarball): check every source under the fixed folders.
  mapfile -t files < <(find analyzer graph profiler runtime tests tools \
                         \( -name '*.cc' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort)
fi
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -ne 0 ]; then
  echo "check_format: ${#bad[@]} file(s) differ from .clang-format (run tools/check_format.sh --fix):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check_format: ${#files[@]} files match .clang-format"
