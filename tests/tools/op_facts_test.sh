#!/bin/sh
# tools/check_op_facts.py: passes on the repository and fails, naming the line, on a tree where
# analyzer/ or runtime/ compares an op's name; graph/ and tests may. Usage: op_facts_test.sh
# REPO_ROOT SCRATCH
set -u
root=$1
work=$2
check="$root/tools/check_op_facts.py"
fail() { echo "op_facts_test: $*"; exit 1; }

python3 "$check" "$root" >/dev/null || fail "the repository itself compares an op's name"

tree() {  # tree NAME: a scratch repository with the folders the check reads
  rm -rf "$work/$1" && mkdir -p "$work/$1/analyzer/derivation" "$work/$1/runtime" \
    "$work/$1/graph/ops" && echo "$work/$1"
}

ok=$(tree ok)
printf 'bool C(const Node& n) { return n.op_type == "Cast"; }\n' >"$ok/graph/ops/cast.cc"
printf 'TEST_CASE("x") { CHECK(n.op_type == "Cast"); }\n' >"$ok/analyzer/derivation/a_test.cc"
printf 'registry.Register("Range", &RangeForward, nullptr);\n' >"$ok/runtime/range.cc"
python3 "$check" "$ok" >/dev/null || fail "graph/, a test or a kernel registration was refused"

named=$(tree named)
printf '// one\n  if (node.op_type == "Transpose") {\n' >"$named/analyzer/derivation/axis.cc"
out=$(python3 "$check" "$named" 2>/dev/null) && fail "an op_type == \"Transpose\" in analyzer/ passed"
echo "$out" | grep -q 'analyzer/derivation/axis.cc:2: if (node.op_type == "Transpose") {' ||
  fail "the comparison was not named: $out"

spellings=$(tree spellings)
printf 'if (p->op_type() != "Constant") return;\n' >"$spellings/runtime/a.cc"
printf 'if ("Range" == producer->op_type) return;\n' >"$spellings/runtime/b.h"
out=$(python3 "$check" "$spellings" 2>/dev/null) && fail "op_type() != and a reversed == passed"
[ "$(echo "$out" | grep -c '^runtime/')" = 2 ] || fail "not both spellings named: $out"
echo "op_facts_test: ok"
