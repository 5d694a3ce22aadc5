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
  EXPECT_OUTPUT "^memplan: --parallel: expected ddp, zero1, zero2, zero3, fsdp, hybrid-shard or auto, got 'zero4'\n$"
  COMMAND analyze ${PP} --gpu 24G --gpus 4 --parallel zero4)
memplan_cli_test("--parallel without --gpus is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --parallel, --nodes, --tp and --engine-options need --gpus N\n$"
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

# --parallel hybrid-shard (PyTorch FSDP HYBRID_SHARD, FSDP2 on a 2-D mesh): fsdp within each
# node, replicas across nodes. tiny_mlp's parameters W1 16x32 = 512, b1 32, W2 32x4 = 128, b2 4
# elements; fp32 Adam: 4 bytes of parameter, 4 of gradient, 8 of moments per element.
# 16 GPUs on 2 nodes shard over the 8 GPUs of a node, per parameter, rounding up:
# ceil(512/8) + ceil(32/8) + ceil(128/8) + ceil(4/8) = 64 + 4 + 16 + 1 = 85 elements:
# parameters 340, gradients 340, optimizer state 680 bytes (fsdp over 16: 32 + 2 + 8 + 1 = 43).
memplan_cli_test("hybrid-shard on 2 nodes x 8 shards 8 ways: model_state_bytes" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"model_state_bytes\": {[ \n]*\"parameters\": 340,[ \n]*\"master_weights\": 0,[ \n]*\"gradients\": 340,[ \n]*\"optimizer_state\": 680"
  COMMAND analyze ${PP} --gpu A100-80GB --gpus 16 --nodes 2 --parallel hybrid-shard
          --global-batch 128 --precision fp32 --optimizer adam --json)
memplan_cli_test("fsdp on 2 nodes x 8 shards 16 ways: model_state_bytes" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"model_state_bytes\": {[ \n]*\"parameters\": 172,[ \n]*\"master_weights\": 0,[ \n]*\"gradients\": 172,[ \n]*\"optimizer_state\": 344"
  COMMAND analyze ${PP} --gpu A100-80GB --gpus 16 --nodes 2 --parallel fsdp
          --global-batch 128 --precision fp32 --optimizer adam --json)
# Collectives per step (k = 1: 128 samples = 8 per rank, m = 8 fits). One FSDP unit (676 <
# min_num_params) of 676 x 4 = 2704 bytes, gathered for forward and again for backward (W2 is
# read by fc2's backward), reduce-scattered once, within the node (8 ranks, A100: nvlink3
# 300e9 B/s x 0.8 = 240e9, 5 us per hop): each 7/8 x 2704 / 240e9 + 7 x 5e-6 = 3.50098583e-5 s.
# Then the 340-byte gradient shard is all-reduced between the 2 nodes (ib-hdr 25e9 x 0.8 =
# 20e9 B/s, 10 us per hop): 2 x 1/2 x 340 / 20e9 + 2 x 1e-5 = 2.0017e-5 s.
# Total 3 x 3.50098583e-5 + 2.0017e-5 = 1.25046575e-4 s.
memplan_cli_test("hybrid-shard collectives: within the node on NVLink, the shard across nodes"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "\"strategy\": \"hybrid-shard\",[^$]*\"communication_total_seconds\": 0\\.0001250465"
  COMMAND analyze ${PP} --gpu A100-80GB --gpus 16 --nodes 2 --parallel hybrid-shard
          --global-batch 128 --precision fp32 --optimizer adam --json)
memplan_cli_test("hybrid-shard text names the shard group" EXPECT_EXIT 0
  EXPECT_OUTPUT "Parallel hybrid-shard on 16 GPUs \\(2 nodes, [^\n]*\n *hybrid-shard: states sharded over the 8 GPUs of each node, replicated on 2 nodes"
  COMMAND analyze ${PP} --gpu A100-80GB --gpus 16 --nodes 2 --parallel hybrid-shard
          --global-batch 128 --precision fp32)
# On one node the shard group is every GPU: 8 GPUs shard 8 ways, the same 340 bytes as above,
# and the report says it is fsdp's plan.
memplan_cli_test("hybrid-shard on one node is fsdp, and says so" EXPECT_EXIT 0
  EXPECT_OUTPUT "hybrid-shard on one node shards over all 8 GPUs and has no replica to all-reduce with: the same plan as fsdp"
  COMMAND analyze ${PP} --gpu A100-80GB --gpus 8 --parallel hybrid-shard --global-batch 64
          --precision fp32)
memplan_cli_test("auto tries hybrid-shard on several nodes" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"strategies\": .[^$]*\"strategy\": \"hybrid-shard\""
  COMMAND analyze ${PP} --gpu A100-80GB --gpus 16 --nodes 2 --global-batch 128 --json)
memplan_cli_test("auto does not try hybrid-shard on one node (it is fsdp)" EXPECT_EXIT 0
  EXPECT_NO_OUTPUT "hybrid-shard"
  COMMAND analyze ${PP} --gpu A100-80GB --gpus 8 --global-batch 64 --json)
# Exports of a hybrid-shard plan: each framework's HYBRID_SHARD spelling, 16 ranks on 2 machines.
# hybrid_shard_export_test(NAME TARGET EXPECT_...): that plan (128 samples in bf16) exported to
# TARGET; one command for every target, so that each test checks the same plan.
function(hybrid_shard_export_test name target)
  memplan_cli_test("${name}" ${ARGN}
    COMMAND analyze ${PP} --gpu A100-80GB --gpus 16 --nodes 2 --parallel hybrid-shard
            --global-batch 128 --precision bf16 --export ${target})
endfunction()
hybrid_shard_export_test("export accelerate of hybrid-shard: FSDP with HYBRID_SHARD" accelerate
  EXPECT_EXIT 0
  EXPECT_OUTPUT "distributed_type: FSDP\nfsdp_config:\n[^$]*  fsdp_sharding_strategy: HYBRID_SHARD\n[^$]*num_machines: 2\nnum_processes: 16\n")
hybrid_shard_export_test("export lightning of hybrid-shard: FSDPStrategy HYBRID_SHARD" lightning
  EXPECT_EXIT 0
  EXPECT_OUTPUT "devices=8,\n    num_nodes=2,\n    strategy=FSDPStrategy\\(\n        sharding_strategy=\"HYBRID_SHARD\",")
hybrid_shard_export_test("export hf-trainer of hybrid-shard: fsdp hybrid_shard auto_wrap" hf-trainer
  EXPECT_EXIT 0
  EXPECT_OUTPUT "# Launch: torchrun --nproc_per_node 8 --nnodes 2 [^$]*fsdp=\"hybrid_shard auto_wrap\",")
# transformers >= 5 runs FSDP2 by default, whose TrainingArguments raise "`fsdp=hybrid_shard` is
# only available with FSDP1" (found by tests/export/export_matrix_check.py): the export names FSDP1.
hybrid_shard_export_test("export hf-trainer of hybrid-shard names FSDP1 (fsdp_config version 1)"
  hf-trainer EXPECT_EXIT 0
  EXPECT_OUTPUT "fsdp_config=\\{\"min_num_params\": [0-9]+, \"backward_prefetch\": \"backward_pre\", \"version\": 1\\}")
memplan_cli_test("export deepspeed refuses hybrid-shard, one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: export: deepspeed cannot express --parallel hybrid-shard [^\n]*\n$"
  COMMAND analyze ${PP} --gpu A100-80GB --gpus 16 --nodes 2 --parallel hybrid-shard
          --global-batch 128 --export deepspeed)
memplan_cli_test("auto with --export deepspeed does not pick hybrid-shard" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"zero_optimization\""
  COMMAND analyze ${PP} --gpu A100-80GB --gpus 16 --nodes 2 --global-batch 128 --export deepspeed)

# The PyTorch target of a data-parallel plan is a torchrun script (torchrun_export.cc).
# hybrid-shard on 2 x 8: a 2-D mesh (replicate, shard), 128 samples = 8 x 1 x 16.
hybrid_shard_export_test("export pytorch of hybrid-shard: torchrun, 2-D mesh, fully_shard" pytorch
  EXPECT_EXIT 0
  EXPECT_OUTPUT "torchrun --nproc-per-node 8 --nnodes 2 [^$]*fully_shard in torch.distributed._composable.fsdp[^$]*from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard\n[^$]*GPUS = 16\nNODES = 2\nMICRO_BATCH = 8  # per rank\nACCUMULATION_STEPS = 1  # one optimizer step per 128 samples over all ranks\nMIN_NUM_PARAMS = 100000000[^$]*mesh_dim_names=\\(\"replicate\", \"shard\"\\)[^$]*fully_shard\\(model, mesh=mesh, mp_policy=policy[^$]*DistributedSampler\\(dataset")
# A master-weights fsdp plan gathers bf16 copies of fp32 shards: MixedPrecisionPolicy.
memplan_cli_test("export pytorch of a master-weights fsdp plan: MixedPrecisionPolicy(bf16)"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "torchrun --nproc-per-node 8 --nnodes 1 train.py[^$]*mesh_dim_names=\\(\"shard\",\\)[^$]*policy = MixedPrecisionPolicy\\(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16\\)"
  EXPECT_NO_OUTPUT "torch.autocast"
  COMMAND analyze ${PP} --gpu A100-80GB --gpus 8 --parallel fsdp --global-batch 64
          --precision bf16 --amp-mode master-weights --export pytorch)
memplan_cli_test("export pytorch of a ddp plan: DistributedDataParallel, 25 MiB buckets"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "BUCKET_CAP_MB = 25\nGRADIENT_AS_BUCKET_VIEW = False\n[^$]*DistributedDataParallel\\([^$]*bucket_cap_mb=BUCKET_CAP_MB"
  COMMAND analyze ${PP} --gpu A100-80GB --gpus 8 --parallel ddp --global-batch 64 --export pytorch)

# The torchrun scripts compile, and the ddp one runs as one rank on CPU (skipped, exit 77,
# without Debian's python3-torch).
memplan_export_script_test("cli: the exported torchrun scripts compile and the ddp one runs on CPU"
  torchrun_export_test.sh torchrun_export ${MEMPLAN_TEST_FIXTURES}/ci_check)

# --engine-options: engine settings under the engines' own names, carried into the plan JSON and
# the exports (analyzer/parallel/engine_options.h).
memplan_cli_test("--engine-options reach the plan JSON and the DeepSpeed export" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"reduce_bucket_size\": 1000"
  COMMAND analyze ${PP} --gpu A100-80GB --gpus 8 --parallel zero2 --global-batch 64
    --precision fp16 --amp-mode master-weights --engine-options reduce_bucket_size=1000
    --export deepspeed)
memplan_cli_test("--engine-options reshard_after_forward=false exports SHARD_GRAD_OP" EXPECT_EXIT 0
  EXPECT_OUTPUT "fsdp_sharding_strategy: SHARD_GRAD_OP"
  COMMAND analyze ${PP} --gpu A100-80GB --gpus 8 --parallel fsdp --global-batch 64
    --engine-options reshard_after_forward=false --export accelerate)
memplan_cli_test("--engine-options with an unknown setting is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --engine-options: unknown engine option 'bucket_size' \\(known: bucket_cap_mb,[^\n]*\n$"
  COMMAND analyze ${PP} --gpu 24G --gpus 4 --engine-options bucket_size=1)
# auto_wrap_policy=transformer: a unit per repeated block (FSDP2's fully_shard per block).
set(GPT ${MEMPLAN_TEST_FIXTURES}/gpt_opset17.onnx)
memplan_cli_test("--engine-options auto_wrap_policy=transformer exports TRANSFORMER_BASED_WRAP" EXPECT_EXIT 0
  EXPECT_OUTPUT "fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP"
  COMMAND analyze ${GPT} --dim seq=64 --gpu 24G --gpus 4 --parallel fsdp
    --engine-options auto_wrap_policy=transformer --export accelerate)
memplan_cli_test("auto_wrap_policy=transformer to lightning is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: export: lightning cannot express the FSDP auto_wrap_policy=transformer[^\n]*\n$"
  COMMAND analyze ${GPT} --dim seq=64 --gpu 24G --gpus 4 --parallel fsdp
    --engine-options auto_wrap_policy=transformer --export lightning)
memplan_cli_test("auto_wrap_policy=transformer on a model without blocks is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: FSDP auto_wrap_policy=transformer: no node name of the model names a repeated block[^\n]*\n$"
  COMMAND analyze ${PP} --gpu 24G --gpus 4 --parallel fsdp --engine-options auto_wrap_policy=transformer)

# --tp (analyzer/parallel/tensor_parallel.h): Megatron-style tensor parallelism of the blocks.
# The zoo's GPT-2 small (12 blocks, 12 heads, hidden 768, MLP 3072, vocabulary 50257): a block
# holds 2 LayerNorms 2 x 1536, c_attn 768 x 2304 + 2304, attn.c_proj 768 x 768 + 768, c_fc
# 768 x 3072 + 3072, mlp.c_proj 3072 x 768 + 768 = 7,087,872 parameters; wte 38,597,376, wpe
# 786,432 and ln_f 1,536 (39,385,344) stay whole. Split 2 ways a block keeps the norms (3,072),
# half of c_attn (884,736 + 1,152), of attn.c_proj's weight (294,912; its bias 768 is added after
# the all-reduce, whole), of c_fc (1,179,648 + 1,536) and of mlp.c_proj's weight (1,179,648;
# bias 768): 3,546,240. Per GPU: 12 x 3,546,240 + 39,385,344 = 81,940,224 of 124,439,808.
set(GPT2 ${MEMPLAN_ZOO_DIR}/gpt2_small.onnx)
memplan_cli_test("--tp 2 splits every GPT-2 block: parameters per GPU" EXPECT_EXIT 0
  EXPECT_OUTPUT "Tensor   tensor parallel 2: 24 column-, 24 row-parallel linear layers \\(12 of 12 blocks split\\), 81940224 of 124439808 parameters per rank, 48 all-reduces per micro-batch"
  COMMAND analyze ${GPT2} --dim seq=1024 --gpu A100-80GB --gpus 2 --tp 2 --precision bf16)
# 8 GPUs = 4 replicas x 2: the global batch counts replicas (8 x 1 x 4 = 32), plan.gpus every GPU.
memplan_cli_test("--gpus 8 --tp 2 JSON: gpus 8, data-parallel replicas make the global batch" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"global_batch\": 32,[^$]*\"parallel\": \"zero1\",[ \n]*\"gpus\": 8,[ \n]*\"nodes\": 1,[ \n]*\"tensor_parallel\": {[ \n]*\"degree\": 2,"
  COMMAND analyze ${GPT2} --dim seq=1024 --gpu A100-80GB --gpus 8 --tp 2 --parallel zero1
    --micro-batch 8 --global-batch 32 --precision bf16 --json)
# DeepSpeed AutoTP: train_batch_size counts data-parallel ranks (8 x 1 x 4), autotp_size the split.
memplan_cli_test("--tp 2 exports DeepSpeed AutoTP" EXPECT_EXIT 0
  EXPECT_OUTPUT "deepspeed --num_gpus 8 train.py[^\n]*\n *\"train_batch_size\": 32,[^$]*\"tensor_parallel\": {\n *\"autotp_size\": 2\n *},"
  COMMAND analyze ${GPT2} --dim seq=1024 --gpu A100-80GB --gpus 8 --tp 2 --parallel zero1
    --micro-batch 8 --global-batch 32 --precision bf16 --export deepspeed)
memplan_cli_test("--tp to accelerate is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: export: accelerate cannot express --tp 2 \\(tensor-parallel layers\\)[^\n]*\n$"
  COMMAND analyze ${GPT2} --dim seq=1024 --gpu A100-80GB --gpus 2 --tp 2 --export accelerate)
# Bad input: 12 heads do not split 8 ways (768 features would); --tp must divide --gpus.
memplan_cli_test("--tp that does not divide the heads is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --tp 8: node '[^']*' \\(Reshape\\) in block 'h.0' of [^\n]*cannot split 8 ways: the heads or hidden units it splits are not a multiple of 8\n$"
  COMMAND analyze ${GPT2} --dim seq=1024 --gpu A100-80GB --gpus 8 --tp 8)
memplan_cli_test("--tp that does not divide --gpus is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --tp 4 must divide the 6 GPUs of a node[^\n]*\n$"
  COMMAND analyze ${GPT2} --gpu 24G --gpus 6 --tp 4)
memplan_cli_test("--tp without --gpus is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --parallel, --nodes, --tp and --engine-options need --gpus N\n$"
  COMMAND analyze ${GPT2} --gpu 24G --tp 2)
# tiny_resnet's only linear layer makes the output: nothing to split.
memplan_cli_test("--tp on a model with nothing to split is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --tp 2: no linear layer of [^\n]*tiny_resnet.onnx splits 2 ways[^\n]*\n$"
  COMMAND analyze ${MEMPLAN_TEST_FIXTURES}/tiny_resnet.onnx --gpu 24G --gpus 2 --tp 2)
memplan_cli_test("verify --tp is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: verify: the runtime does not execute tensor-parallel plans[^\n]*\n$"
  COMMAND verify ${GPT2} --dim seq=64 --gpus 2 --tp 2 --micro-batch 1 --precision fp32)
