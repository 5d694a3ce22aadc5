#!/bin/sh
# tools/check_stage_includes.py: passes on the repository and fails, naming the line, on a tree
# with an include of a later stage, an include across two folders of one rank, and a file
# outside any stage folder. Usage: stage_includes_test.sh REPO_ROOT SCRATCH
set -u
root=$1
work=$2
check="$root/tools/check_stage_includes.py"
fail() { echo "stage_includes_test: $*"; exit 1; }

python3 "$check" "$root" >/dev/null || fail "the repository itself has an upward include"

tree() {  # tree NAME: a scratch analyzer/ with one file per stage it names
  rm -rf "$work/$1" && mkdir -p "$work/$1/analyzer/program" "$work/$1/analyzer/planning" \
    "$work/$1/analyzer/parallel" "$work/$1/analyzer/offload" && echo "$work/$1"
}

ok=$(tree ok)
printf '#include "analyzer/program/a.h"\n' >"$ok/analyzer/planning/b.h"
printf '#pragma once\n' >"$ok/analyzer/program/a.h"
python3 "$check" "$ok" >/dev/null || fail "a downward include was refused"

up=$(tree up)
printf '#include "analyzer/planning/b.h"\n' >"$up/analyzer/program/a.h"
printf '#pragma once\n' >"$up/analyzer/planning/b.h"
out=$(python3 "$check" "$up") && fail "program including planning passed"
echo "$out" | grep -q 'analyzer/program/a.h:1: program includes later stage planning' ||
  fail "the upward include was not named: $out"

same=$(tree same)
printf '  #  include "analyzer/offload/o.h"\n' >"$same/analyzer/parallel/p.h"
printf '#pragma once\n' >"$same/analyzer/offload/o.h"
python3 "$check" "$same" >/dev/null && fail "parallel including offload (one rank) passed"

loose=$(tree loose)
printf '#pragma once\n' >"$loose/analyzer/loose.h"
out=$(python3 "$check" "$loose") && fail "a file outside the stage folders passed"
echo "$out" | grep -q 'analyzer/loose.h: not in a stage folder' || fail "loose file not named: $out"
echo "stage_includes_test: ok"
