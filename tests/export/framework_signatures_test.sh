#!/bin/sh
# The HF Trainer and Lightning argument sets of `memplan export` are accepted by the frameworks'
# real signatures (issue 16): exports the checked-in plans and data-parallel plans of the TinyGPT
# fixture (ddp, zero2, zero3, fsdp on 8 GPUs) to hf-trainer, hf-trainer-json and lightning, then
# framework_signatures_check.py builds TrainingArguments(**exported) and Trainer(**exported).
# An export memplan refuses (exit 2: e.g. Lightning cannot run an autocast zero2 plan) has no
# arguments to check; any other failure fails the test.
#
# usage: framework_signatures_test.sh MEMPLAN_BINARY FIXTURES_DIR WORK_DIR
# Exit 0 pass, 1 fail, 77 skipped: neither transformers nor lightning (2.x) imports in /usr/bin/python3 (PYTHON overrides it), as on Debian 12. No stand-in packages.
here=$(dirname "$0")
. "$here/export_test_preamble.sh"  # set -u; $bin, $fixtures, $work
require_python
if ! "$python" -c 'import transformers' 2>/dev/null &&
  ! "$python" -c 'import lightning.pytorch' 2>/dev/null; then
  echo "SKIP: $python imports neither transformers nor lightning.pytorch"
  exit 77
fi
rm -rf "$work"
mkdir -p "$work/plans" "$work/exports" || fail "cannot create $work"

cp "$fixtures"/plans/resnet18_fp16_plan.json "$fixtures"/plans/gpt_bf16_plan.json \
  "$fixtures"/plans/mlp_fp32_sgd_plan.json "$work/plans/" || fail "no fixture plans"
for parallel in ddp zero2 zero3 fsdp; do
  "$bin" analyze "$fixtures/gpt_opset17.onnx" --dim seq=32 --gpu 24G --gpus 8 \
    --parallel "$parallel" --precision bf16 --json >"$work/plans/gpt_$parallel.json" ||
    fail "analyze --parallel $parallel exited $?"
done

for plan in "$work"/plans/*.json; do
  name=$(basename "$plan" .json)
  for target in hf-trainer hf-trainer-json lightning; do
    "$bin" export "$plan" --to "$target" --lr 0.001 --out "$work/exports/$name.$target" \
      2>"$work/exports/$name.$target.err"
    rc=$?
    if [ "$rc" -eq 2 ]; then
      echo "refused: $name --to $target: $(cat "$work/exports/$name.$target.err")"
      rm -f "$work/exports/$name.$target"
    elif [ "$rc" -ne 0 ]; then
      fail "export $name --to $target exited $rc"
    fi
  done
done
rm -f "$work"/exports/*.err
"$python" "$here/framework_signatures_check.py" "$work/exports"
