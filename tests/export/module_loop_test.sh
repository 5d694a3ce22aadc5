#!/bin/sh
# Runs the exported PyTorch loop of a module plan on CPU and checks at run time that exactly the
# plan's modules are checkpointed (issue 16). run_module_loop.py defines BlockNet (4 residual
# blocks in an nn.ModuleList) and exports it to ONNX here, so the ONNX names memplan plans from and
# the modules the loop wraps are one model. Each precision is planned with --recompute-unit module
# and --recompute optimal under a GPU whose budget lies halfway between the peaks of no recompute
# and of every block checkpointed, so the plan checkpoints some blocks but not all; the plan is
# exported with `memplan export --to pytorch` and run (run_module_loop.py says what it checks).
# fp16 runs only where CPU autocast has float16 (torch 2.x); torch 1.13 has not
# (cpu_fp16_autocast.py prints the reason), and the fp16 run is then skipped, the others not.
#
# usage: module_loop_test.sh MEMPLAN_BINARY WORK_DIR
# Exit 0 pass, 1 fail, 77 skipped (no /usr/bin/python3 with torch; PYTHON overrides it).
here=$(dirname "$0")
. "$here/export_test_preamble.sh"  # set -u; $bin, $work
require_python torch
fresh_dir "$work"

"$python" "$here/run_module_loop.py" onnx "$work/blocknet.onnx" || fail "cannot export BlockNet"

cpu_loop_precisions

for precision in $precisions; do
  # Micro-batch 64, two of them per optimizer step.
  common="$work/blocknet.onnx --micro-batch 64 --global-batch 128 --precision $precision --allocator exact --recompute-unit module"
  for kind in none all; do
    # shellcheck disable=SC2086
    "$bin" analyze $common --gpu 80G --recompute "$kind" --json >"$work/plan-$precision-$kind.json" ||
      fail "analyze --precision $precision --recompute $kind exited $?"
  done
  gpu=$("$python" "$here/run_module_loop.py" budget "$work/plan-$precision-none.json" \
    "$work/plan-$precision-all.json") || fail "no budget between the $precision peaks"
  # shellcheck disable=SC2086
  "$bin" analyze $common --gpu "$gpu" --recompute optimal --json >"$work/plan-$precision.json" ||
    fail "analyze --precision $precision --gpu $gpu exited $?"
  "$bin" export "$work/plan-$precision.json" --to pytorch --out "$work/loop_$precision.py" ||
    fail "export --to pytorch ($precision) exited $?"
  "$python" "$here/run_module_loop.py" run "$work/plan-$precision.json" "$work/loop_$precision.py" ||
    fail "the exported $precision loop does not checkpoint exactly the plan's modules"
done
echo "PASS"
