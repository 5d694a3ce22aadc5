#!/bin/sh
# The exported configs run in the real frameworks on the CPU (issue 43): tools/run_exported_plans.py
# trains a tiny GPT-2 for 2 optimizer steps with the pytorch loop, the HF Trainer, Lightning,
# `accelerate launch`, torchrun (gloo: DDP and FSDP on 2 ranks, hybrid shard on 4) and DeepSpeed's
# engine (ZeRO 1-3 on 2 ranks) as exported, checks the DeepSpeed offload configs with DeepSpeed's
# own config classes and asserts what a framework refuses on the CPU; it asserts at run time that
# what runs is the plan (its docstring lists each check).
#
# usage: framework_runs_test.sh MEMPLAN_BINARY WORK_DIR
# Exit 0 pass, 1 fail, 77 skipped: the frameworks do not import (no ../memplan-venv, as in CI).
here=$(dirname "$0")
. "$here/export_test_preamble.sh"  # set -u; $bin, $work
require_python torch
require_frameworks
fresh_dir "$work"
CUDA_VISIBLE_DEVICES='' "$python" "$here/../../tools/run_exported_plans.py" "$bin" "$work"
