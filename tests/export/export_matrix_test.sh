#!/bin/sh
# Every export target x every plan feature (issue 43): export_matrix_check.py exports a tiny
# GPT-2 plan with each feature to pytorch, torchrun, hf-trainer, accelerate, lightning, deepspeed
# and torchtune, reads each output with the framework's own classes (TrainingArguments,
# DeepSpeedConfig, accelerate's config loader, Lightning's strategies, OmegaConf and torchtune's
# component resolver, peft's LoraConfig, transformers' BitsAndBytesConfig, bitsandbytes'
# optimizers) and fails when a feature is neither in what the framework reads nor refused in one
# line (exit 2, `memplan: ...`). Every torchtune YAML it wrote then goes through torchtune's own
# validation and one training step of a tiny model (tools/recipes/validate_torchtune_config.py).
#
# usage: export_matrix_test.sh MEMPLAN_BINARY WORK_DIR
# Exit 0 pass, 1 fail, 77 skipped: the frameworks do not import (no ../memplan-venv, as in CI).
here=$(dirname "$0")
. "$here/export_test_preamble.sh"  # set -u; $bin, $work
require_python torch
require_frameworks
fresh_dir "$work"
"$python" "$here/export_matrix_check.py" "$bin" "$work" || fail "a plan feature was dropped"
# shellcheck disable=SC2046 # one argument per file; the names have no spaces
"$python" "$here/../../tools/recipes/validate_torchtune_config.py" $(ls "$work"/*_torchtune.yaml) ||
  fail "torchtune rejects an exported recipe config"
echo "PASS"
