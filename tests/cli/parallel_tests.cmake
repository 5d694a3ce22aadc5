# `memplan analyze --gpus N --parallel ...` (docs/multi_gpu.md): the per-rank plan, the global
# batch over all ranks, the DeepSpeed export for N ranks, and the one-line errors (exit 2).
# tests/fixtures/tiny_mlp.onnx has 676 parameters (fc1 16x32 + 32, fc2 32x4 + 4... in fp32).
set(PP ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx)

# 64 samples over 8 GPUs: 8 per rank; the tiny model fits m = 8 at once, so k = 1.
memplan_cli_test("analyze --gpus 8 --parallel zero2 plans per rank" EXPECT_EXIT 0
  EXPECT_OUTPUT "Plan     micro-batch 8 x 1 accumulation steps x 8 GPUs = global batch 64\n[^\n]*\nParallel zero2 on 8 GPUs \\(1 node, "
  COMMAND analyze ${PP} --gpu A100-80GB --gpus 8 --parallel zero2 --global-batch 64 --precision fp32)
memplan_cli_test("analyze --gpus JSON has plan.parallel, plan.gpus, model_state_bytes" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"global_batch\": 64,[^}]*\"parallel\": \"zero1\",[ \n]*\"gpus\": 8,[ \n]*\"nodes\": 1[^$]*\"model_state_bytes\": {[ \n]*\"parameters\": [0-9]+,[ \n]*\"master_weights\": [0-9]+,[ \n]*\"gradients\": [0-9]+,[ \n]*\"optimizer_state\": [0-9]+"
  COMMAND analyze ${PP} --gpu A100-80GB --gpus 8 --parallel zero1 --global-batch 64 --precision fp32 --json)
memplan_cli_test("analyze --parallel auto says why" EXPECT_EXIT 0
  EXPECT_OUTPUT "Strategy [a-z0-9]+: the fastest that fits, [0-9.]+ samples/s at micro-batch 8 x 1 x 8 GPUs"
  COMMAND analyze ${PP} --gpu A100-80GB --gpus 8 --parallel auto --global-batch 64)
# DeepSpeed asserts train_batch_size == micro * accumulation * world size: 8 * 1 * 8 = 64.
memplan_cli_test("export deepspeed for 8 ranks: stage and train_batch_size" EXPECT_EXIT 0
  EXPECT_OUTPUT "deepspeed --num_gpus 8 train.py[^\n]*\n *\"train_batch_size\": 64,\n *\"train_micro_batch_size_per_gpu\": 8,[^$]*\"zero_optimization\": {\n *\"stage\": 3,"
  COMMAND analyze ${PP} --gpu A100-80GB --gpus 8 --parallel zero3 --global-batch 64 --export deepspeed)
# Lightning and Trainer on N ranks: devices per machine, nodes, and the strategy the per-rank
# program was derived with. 16 GPUs on 2 nodes: 8 devices each; 64 samples = 4 x 1 x 16.
memplan_cli_test("export lightning for 2 nodes x 8 GPUs: devices, num_nodes, fsdp strategy"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "devices=8,\n    num_nodes=2,\n    strategy=FSDPStrategy\\(\n        sharding_strategy=\"FULL_SHARD\",\n        auto_wrap_policy=functools.partial\\(size_based_auto_wrap_policy, min_num_params=100000000\\),"
  COMMAND analyze ${PP} --gpu A100-80GB --gpus 16 --nodes 2 --parallel fsdp --global-batch 64
          --precision bf16 --export lightning)
# A ZeRO stage runs DeepSpeed's engine under Lightning too: without --amp-mode the plan is made
# with master weights, and the strategy is Lightning's registered deepspeed_stage_2.
memplan_cli_test("export lightning of a zero2 plan: deepspeed_stage_2, bf16-mixed" EXPECT_EXIT 0
  EXPECT_OUTPUT "strategy=\"deepspeed_stage_2\",\n    precision=\"bf16-mixed\","
  COMMAND analyze ${PP} --gpu A100-80GB --gpus 8 --parallel zero2 --global-batch 64
          --precision bf16 --export lightning)
memplan_cli_test("export lightning refuses an autocast zero2 plan, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: export: lightning under --parallel zero2 cannot express --amp-mode autocast[^\n]*re-plan with --amp-mode master-weights\n$"
  COMMAND analyze ${PP} --gpu A100-80GB --gpus 8 --parallel zero2 --global-batch 64
          --precision bf16 --amp-mode autocast --export lightning)
memplan_cli_test("export hf-trainer for 8 ranks of ddp: the torchrun launch" EXPECT_EXIT 0
  EXPECT_OUTPUT "# Launch: torchrun --nproc_per_node 8 train.py\n"
  COMMAND analyze ${PP} --gpu A100-80GB --gpus 8 --parallel ddp --global-batch 64 --export hf-trainer)
memplan_cli_test("export hf-trainer-json of a zero3 plan points deepspeed at ds_config.json"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "\"per_device_train_batch_size\": 8,[^$]*\"deepspeed\": \"ds_config.json\""
  COMMAND analyze ${PP} --gpu A100-80GB --gpus 8 --parallel zero3 --global-batch 64
          --export hf-trainer-json)
memplan_cli_test("export hf-trainer of an fsdp plan: fsdp and fsdp_config" EXPECT_EXIT 0
  EXPECT_OUTPUT "fsdp=\"full_shard auto_wrap\",\n    fsdp_config={\"min_num_params\": 100000000, \"backward_prefetch\": \"backward_pre\"},"
  COMMAND analyze ${PP} --gpu A100-80GB --gpus 8 --parallel fsdp --global-batch 64 --export hf-trainer)

# Errors: one line, exit 2.
memplan_cli_test("--gpus 0 is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --gpus: expected a positive integer, got '0'\n$"
  COMMAND analyze ${PP} --gpu 24G --gpus 0)
memplan_cli_test("--parallel unknown strategy is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --parallel: expected ddp, zero1, zero2, zero3, fsdp or auto, got 'zero4'\n$"
  COMMAND analyze ${PP} --gpu 24G --gpus 4 --parallel zero4)
memplan_cli_test("--parallel without --gpus is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --parallel and --nodes need --gpus N\n$"
  COMMAND analyze ${PP} --gpu 24G --parallel zero2)
memplan_cli_test("--nodes that do not divide --gpus is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --nodes 3 must divide --gpus 8[^\n]*\n$"
  COMMAND analyze ${PP} --gpu 24G --gpus 8 --nodes 3)
memplan_cli_test("a global batch no m, k, N reach is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: global batch 10 is not reachable on 4 GPUs[^\n]*\n$"
  COMMAND analyze ${PP} --gpu 24G --gpus 4 --global-batch 10)
# shape_chain.onnx has no trainable parameters: DDP refuses such a module, nothing to shard.
memplan_cli_test("a strategy the model cannot use is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --parallel fsdp: the model has no trainable parameters[^\n]*\n$"
  COMMAND analyze ${MEMPLAN_TEST_FIXTURES}/shape_chain.onnx --gpu 24G --gpus 4 --parallel fsdp)
