#!/bin/sh
# The checkpointed modules of every export are exactly the plan's (issue 16). Plans the TinyGPT
# fixture (torch.onnx.export names: /blocks/blocks.0/attn/...) with module recompute, once under a
# budget that needs some blocks checkpointed and once with --recompute all, exports each plan and
# checks with module_checkpoints_check.py that
#   * the PyTorch loop's CHECKPOINTED_MODULES is plan.recompute_modules, in order;
#   * every node in plan.recompute lies inside one of those modules;
#   * HF TrainingArguments says gradient_checkpointing=True is exact only for the all-blocks plan
#     and names what it cannot express otherwise;
#   * the DeepSpeed config's "_not_expressed" names exactly those modules.
#
# usage: module_checkpoints_test.sh MEMPLAN_BINARY FIXTURES_DIR WORK_DIR
# Exit 0 pass, 1 fail, 77 skipped (no python3; PYTHON overrides it).
here=$(dirname "$0")
. "$here/export_test_preamble.sh"  # set -u; $bin, $fixtures, $work
require_python
fresh_dir "$work"

# 13 MiB for TinyGPT at m=32, seq 32 in fp32: more than it fits without recompute
# (tests/cli/recompute_tests.cmake).
common="$fixtures/gpt_opset17.onnx --micro-batch 32 --dim seq=32 --precision fp32 --allocator exact --attention eager --recompute-unit module"
for kind in optimal all; do
  # shellcheck disable=SC2086
  "$bin" analyze $common --gpu 525M --recompute "$kind" --json >"$work/plan-$kind.json" ||
    fail "analyze --recompute $kind exited $?"
  for target in pytorch hf-trainer deepspeed; do
    "$bin" export "$work/plan-$kind.json" --to "$target" --out "$work/$kind.$target" ||
      fail "export --to $target ($kind) exited $?"
  done
  "$python" "$here/module_checkpoints_check.py" "$kind" "$work/plan-$kind.json" \
    "$work/$kind.pytorch" "$work/$kind.hf-trainer" "$work/$kind.deepspeed" ||
    fail "the $kind plan's exports do not checkpoint exactly its modules"
done
echo "PASS"
