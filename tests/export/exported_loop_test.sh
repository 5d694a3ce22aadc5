#!/bin/sh
# Plans tests/fixtures/ci_check/mlp.onnx with recompute in fp32 and in bf16, exports each plan
# with `memplan export --to pytorch` and runs the exported loop on CPU (run_exported_loop.py says
# what it checks). fp16 runs only where CPU autocast has float16 (torch 2.x): torch 1.13's
# torch.autocast("cpu", dtype=torch.float16) raises "Currently, AutocastCPU only support Bfloat16
# as the autocast_cpu_dtype", so there the fp16 run is skipped with cpu_fp16_autocast.py's reason
# printed, and fp32 and bf16 still run.
#
# usage: exported_loop_test.sh MEMPLAN_BINARY CI_FIXTURES_DIR WORK_DIR
# Exit 0 pass, 1 fail, 77 skipped (no /usr/bin/python3 with torch; PYTHON overrides it).
here=$(dirname "$0")
. "$here/export_test_preamble.sh"  # set -u; $bin, $fixtures, $work
require_python torch
fresh_dir "$work"

cpu_loop_precisions

for precision in $precisions; do
  # Micro-batch 4, two of them per optimizer step.
  "$bin" analyze "$fixtures/mlp.onnx" --gpu 24G --batch 4 --global-batch 8 \
    --precision "$precision" --recompute all --json >"$work/plan-$precision.json" ||
    fail "analyze --precision $precision exited $?"
  "$bin" export "$work/plan-$precision.json" --to pytorch --out "$work/loop_$precision.py" ||
    fail "export --to pytorch ($precision) exited $?"
  "$python" "$here/run_exported_loop.py" "$work/plan-$precision.json" \
    "$work/loop_$precision.py" || fail "the exported $precision loop does not run as planned"
done
echo "PASS"
