# What the user runs is the plan (issue 43): a strategy is planned in the regime its engine runs,
# the plan JSON records the fine-tuning an export must rebuild, and the exports carry it or
# refuse in one line. (No square brackets in the regexes: CMake would not split the argument
# list after one.)
set(MLP ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx)

# A ZeRO stage is DeepSpeed's engine: without --amp-mode its plan keeps fp32 master weights and
# FusedAdam (analyzer/parallel/engine_regime.h); with it, the user's regime stays.
memplan_cli_test("analyze --parallel zero2 plans DeepSpeed's master weights and FusedAdam"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "\"amp_mode\": \"master-weights\",[^$]*\"optimizer_impl\": \"fused\""
  COMMAND analyze ${MLP} --gpu A100-80GB --gpus 8 --parallel zero2 --global-batch 64
          --precision bf16 --optimizer adam --json)
memplan_cli_test("analyze --parallel zero2 --amp-mode autocast keeps the regime asked"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "\"amp_mode\": \"autocast\""
  COMMAND analyze ${MLP} --gpu A100-80GB --gpus 8 --parallel zero2 --global-batch 64
          --precision bf16 --amp-mode autocast --json)
memplan_cli_test("analyze --parallel ddp keeps autocast" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"amp_mode\": \"autocast\""
  COMMAND analyze ${MLP} --gpu A100-80GB --gpus 8 --parallel ddp --global-batch 64
          --precision bf16 --json)
# --parallel auto tries only the strategies the --export target runs: the PyTorch target's
# scripts run DDP and FSDP, no ZeRO stage (the analysis is printed, the config goes to a file).
memplan_cli_test("analyze --export pytorch --parallel auto tries no ZeRO stage" EXPECT_EXIT 0
  EXPECT_OUTPUT "ddp"
  EXPECT_NO_OUTPUT "zero1|zero2|zero3"
  COMMAND analyze ${MLP} --gpu A100-80GB --gpus 8 --global-batch 64 --precision bf16
          --export pytorch --export-out /dev/null)
memplan_cli_test("analyze --parallel auto compares the ZeRO stages" EXPECT_EXIT 0
  EXPECT_OUTPUT "zero1"
  COMMAND analyze ${MLP} --gpu A100-80GB --gpus 8 --global-batch 64 --precision bf16)

# The plan JSON records LoRA as PEFT builds it: rank, alpha (memplan's scaling 1: alpha = r) and
# the adapted module (tiny_mlp's W1 has no module scope: its weight name).
memplan_cli_test("analyze --lora records plan.lora" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"lora\": {[ \n]*\"rank\": 4,[ \n]*\"alpha\": 4,[ \n]*\"dropout\": 0\\.0,[ \n]*\"target_modules\": [^$]*\"W1\""
  COMMAND analyze ${MLP} --gpu 24G --batch 4 --lora 4 --lora-targets "^W1$" --json)
memplan_cli_test("analyze --optimizer adamw8bit records its uint8 state" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"optimizer_state_dtype\": \"uint8\""
  COMMAND analyze ${MLP} --gpu 24G --batch 4 --optimizer adamw8bit --json)
memplan_cli_test("analyze --lora names rank, alpha and modules in the text" EXPECT_EXIT 0
  EXPECT_OUTPUT "\nLoRA     rank 4 \\(alpha 4\\) on 1 module: W1\n"
  COMMAND analyze ${MLP} --gpu 24G --batch 4 --lora 4 --lora-targets "^W1$")
memplan_cli_test("analyze --lora --base-dtype nf4 --export hf-trainer writes LoraConfig and nf4"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "LORA_CONFIG = LoraConfig\\(r=2, lora_alpha=2, lora_dropout=0\\.0, target_modules=.\"W1\", \"W2\".[^\n]*\nLORA_TARGET_MODULE_COUNT = 2\n[^$]*bnb_4bit_quant_type=\"nf4\""
  COMMAND analyze ${MLP} --gpu 24G --batch 4 --lora 2 --lora-targets "W[12]" --base-dtype nf4
          --export hf-trainer)
memplan_cli_test("analyze --lora --export hf-trainer-json refuses in one line, exit 2"
  EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: export: hf-trainer-json \\(TrainingArguments fields only\\) cannot express --lora 2[^\n]*\n$"
  COMMAND analyze ${MLP} --gpu 24G --batch 4 --lora 2 --lora-targets "W[12]"
          --export hf-trainer-json)
memplan_cli_test("analyze --optimizer paged-adamw8bit --export pytorch imports bitsandbytes"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "\nimport bitsandbytes\n[^$]*bitsandbytes\\.optim\\.PagedAdamW8bit\\(params"
  COMMAND analyze ${MLP} --gpu 24G --batch 4 --optimizer paged-adamw8bit --export pytorch)

# README's export commands: the default plan is autocast, which the PyTorch loop runs; the
# DeepSpeed config is planned in DeepSpeed's regime by `analyze --export deepspeed`, and an
# autocast plan exported --to deepspeed says so in one line.
memplan_cli_test("README: analyze --export deepspeed plans and writes the config" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"train_micro_batch_size_per_gpu\""
  COMMAND analyze ${MLP} --gpu 24G --global-batch 64 --precision bf16 --export deepspeed)
