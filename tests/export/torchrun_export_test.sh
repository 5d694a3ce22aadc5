#!/bin/sh
# The torchrun scripts of `memplan export --to pytorch` for data-parallel plans
# (analyzer/config_export/torchrun_export.cc): the ddp, fsdp and hybrid-shard scripts compile
# (python3 -m py_compile), and the ddp script runs as one rank on CPU with gloo
# (run_torchrun_ddp.py says what it checks). The FSDP2 scripts are not run: fully_shard needs
# torch >= 2.4 and Debian's python3-torch is 1.13.
#
# usage: torchrun_export_test.sh MEMPLAN_BINARY CI_FIXTURES_DIR WORK_DIR
# Exit 0 pass, 1 fail, 77 skipped (no /usr/bin/python3 with torch; PYTHON overrides it).
here=$(dirname "$0")
. "$here/export_test_preamble.sh"  # set -u; $bin, $fixtures, $work
require_python
fresh_dir "$work"

# 16 GPUs on 2 nodes, 64 samples per step: 4 per rank.
for strategy in ddp fsdp hybrid-shard; do
  "$bin" analyze "$fixtures/mlp.onnx" --gpu A100-80GB --gpus 16 --nodes 2 --parallel "$strategy" \
    --global-batch 64 --precision bf16 --json >"$work/plan-$strategy.json" ||
    fail "analyze --parallel $strategy exited $?"
  "$bin" export "$work/plan-$strategy.json" --to pytorch --out "$work/train_$strategy.py" ||
    fail "export --to pytorch ($strategy) exited $?"
  "$python" -m py_compile "$work/train_$strategy.py" || fail "train_$strategy.py does not compile"
done

"$python" -c 'import torch' 2>/dev/null || { echo "SKIP (compiled only): $python has no torch"; exit 77; }
for precision in fp32 bf16; do
  # One rank: micro-batch 4, two of them per optimizer step; every module recomputed.
  "$bin" analyze "$fixtures/mlp.onnx" --gpu 24G --gpus 1 --parallel ddp --batch 4 \
    --global-batch 8 --precision "$precision" --recompute all --json \
    >"$work/plan-ddp-$precision.json" || fail "analyze ddp --precision $precision exited $?"
  "$bin" export "$work/plan-ddp-$precision.json" --to pytorch \
    --out "$work/run_ddp_$precision.py" || fail "export ddp ($precision) exited $?"
  CUDA_VISIBLE_DEVICES= "$python" "$here/run_torchrun_ddp.py" "$work/plan-ddp-$precision.json" \
    "$work/run_ddp_$precision.py" || fail "the exported $precision ddp script does not run as planned"
done
echo "PASS"
