#!/bin/sh
# The PyTorch export of a node-level plan (issue 16): plans run_module_loop.py's BlockNet with
# --recompute-unit node (--recompute all and sqrt), exports `--to pytorch` and checks with
# run_selective_loop.py that the selective-checkpoint policy (torch >= 2.4) lists exactly the ATen
# ops of the plan's recomputed nodes per module, and that the loop runs on CPU: with the policy
# where torch has it, with the whole-module fallback where it has not (torch 1.13 here).
#
# usage: selective_loop_test.sh MEMPLAN_BINARY WORK_DIR
# Exit 0 pass, 1 fail, 77 skipped (no /usr/bin/python3 with torch; PYTHON overrides it).
here=$(dirname "$0")
. "$here/export_test_preamble.sh"  # set -u; $bin, $work
require_python torch
fresh_dir "$work"

"$python" "$here/run_module_loop.py" onnx "$work/blocknet.onnx" || fail "cannot export BlockNet"
for kind in all sqrt; do
  "$bin" analyze "$work/blocknet.onnx" --micro-batch 64 --global-batch 128 --precision fp32 \
    --allocator exact --recompute-unit node --recompute "$kind" --gpu 80G --json \
    >"$work/plan-$kind.json" || fail "analyze --recompute $kind exited $?"
  "$bin" export "$work/plan-$kind.json" --to pytorch --out "$work/loop_$kind.py" ||
    fail "export --to pytorch ($kind) exited $?"
  "$python" "$here/run_selective_loop.py" "$kind" "$work/plan-$kind.json" "$work/loop_$kind.py" ||
    fail "the $kind plan's selective policy is not the plan's"
done
echo "PASS"
