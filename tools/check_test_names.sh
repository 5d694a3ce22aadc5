#!/usr/bin/env bash
# Fails when a Catch2 test name would not run under ctest: catch_discover_tests passes the name to
# the test binary as an argument, so a name that starts with "-" is parsed as an option ("Unrecognised
# token") and fails, and ctest splits a name at ';' into names that match nothing. Run by
# tools/test.sh (and so by CI) before the build.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=$(grep -rlPz 'TEST_CASE\(\s*"(-|[^"]*;)' tests/ --include='*.cc' || true)
if [ -n "$bad" ]; then
  echo "check_test_names: a TEST_CASE name starts with '-' or contains ';' in:" >&2
  printf '  %s\n' $bad >&2
  exit 1
fi
