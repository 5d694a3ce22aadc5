# `memplan analyze --offload ...` (docs/finetuning.md, "Offload"): the host bytes beside the GPU
# peak, the plan.offload JSON object, the exports that carry it and the one-line errors.
# tests/fixtures/tiny_mlp.onnx has 676 parameters (fc1 16x32 + 32, fc2 32x4 + 4), fp32.
set(OF ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx)

# fp32 Adam, optimizer offloaded: the host keeps an fp32 twin of the parameters (4 x 676 = 2704),
# fp32 gradients (2704) and Adam's moments (8 x 676 = 5408): 16 x 676 = 10816 bytes = 10.6 KiB.
memplan_cli_test("analyze --offload optimizer reports the host bytes beside the peak" EXPECT_EXIT 0
  EXPECT_OUTPUT "Peak     [^\n]*\n[^$]*Host     10.6 KiB pinned \\(optimizer state, the parameter copies it updates and gradients offloaded\\)\n         PCIe 4.0 x16 at 25.2 GB/s: [^\n]* per step, [^\n]*; optimizer step on the CPU "
  COMMAND analyze ${OF} --gpu 24G --precision fp32 --optimizer adam --offload optimizer)
memplan_cli_test("analyze --offload optimizer JSON: plan.offload with hand-derived host bytes" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"offload\": {[ \n]*\"mode\": \"optimizer\",[ \n]*\"host_bytes\": 10816,[ \n]*\"host_breakdown\": {[ \n]*\"parameters\": 2704,[ \n]*\"gradients\": 2704,[ \n]*\"optimizer_state\": 5408,[^}]*},[ \n]*\"host_saved_activation_bytes\": 0,[ \n]*\"host_link\": \"pcie4\",[ \n]*\"host_link_bytes_per_second\": 25200000000[.0]*,[ \n]*\"transfer_bytes_per_step\": 5408,"
  COMMAND analyze ${OF} --gpu 24G --precision fp32 --optimizer adam --offload optimizer --json)
# bf16 master weights, parameters offloaded too: bf16 working copies 2 x 676 = 1352, fp32
# masters 2704, fp32 gradients 2704, moments 5408: 18 x 676 = 12168 bytes. H100: PCIe 5.
memplan_cli_test("analyze --offload optimizer+params: 18 bytes per parameter on the host" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"offload\": {[ \n]*\"mode\": \"optimizer\\+params\",[ \n]*\"host_bytes\": 12168,[^}]*}[^}]*\"host_link\": \"pcie5\","
  COMMAND analyze ${OF} --gpu H100 --precision bf16 --amp-mode master-weights --optimizer adam --offload optimizer+params --json)
# save_on_cpu: nothing saved stays on the GPU at the end of the forward.
memplan_cli_test("analyze --offload activations keeps no saved bytes on the GPU" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"saved_activation_bytes\": 0,[^$]*\"offload\": {[ \n]*\"mode\": \"activations\","
  COMMAND analyze ${OF} --gpu 24G --precision fp32 --micro-batch 8 --offload activations --json)
memplan_cli_test("analyze without --offload has no plan.offload" EXPECT_EXIT 0
  EXPECT_NO_OUTPUT "\"offload\""
  COMMAND analyze ${OF} --gpu 24G --precision fp32 --json)

# Exports.
memplan_cli_test("--offload optimizer exports DeepSpeed ZeRO-Offload (stage 2 on one GPU)" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"zero_optimization\": {\n *\"stage\": 2,\n *\"offload_optimizer\": {\n *\"device\": \"cpu\",\n *\"pin_memory\": true\n *},"
  COMMAND analyze ${OF} --gpu 24G --precision fp32 --offload optimizer --export deepspeed)
memplan_cli_test("--offload optimizer+params exports offload_param under stage 3" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"stage\": 3,\n *\"offload_optimizer\": {[^}]*},\n *\"offload_param\": {\n *\"device\": \"cpu\",\n *\"pin_memory\": true\n *}"
  COMMAND analyze ${OF} --gpu 24G --precision fp32 --offload optimizer+params --export deepspeed)
memplan_cli_test("--offload optimizer exports Accelerate's DeepSpeed plugin" EXPECT_EXIT 0
  EXPECT_OUTPUT "offload_optimizer_device: cpu\n  offload_param_device: none\n[^$]*distributed_type: DEEPSPEED\n"
  COMMAND analyze ${OF} --gpu A100-80GB --precision bf16 --offload optimizer --export accelerate)
memplan_cli_test("--offload activations exports save_on_cpu in the PyTorch loop" EXPECT_EXIT 0
  EXPECT_OUTPUT "with torch.autograd.graph.save_on_cpu\\(pin_memory=True\\):\n            loss = "
  COMMAND analyze ${OF} --gpu 24G --precision fp32 --offload activations --export pytorch)
memplan_cli_test("--offload optimizer cannot be exported to the HF Trainer" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: export: hf-trainer cannot express --offload optimizer, which the plan modelled; export with --to deepspeed or accelerate\n$"
  COMMAND analyze ${OF} --gpu 24G --precision fp32 --offload optimizer --export hf-trainer)

# Errors: one line, exit 2.
memplan_cli_test("--offload bogus is one line listing the choices" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --offload: expected none, optimizer, optimizer\\+params or activations, got 'bogus'\n$"
  COMMAND analyze ${OF} --gpu 24G --offload bogus)
memplan_cli_test("--offload with --gpus is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --offload optimizer is planned for one GPU; with --gpus it is not modelled yet\n$"
  COMMAND analyze ${OF} --gpu 24G --gpus 2 --offload optimizer)
memplan_cli_test("--offload activations with --recompute all is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --offload activations keeps no saved tensor on the GPU, so --recompute all has nothing to drop; use --recompute none\n$"
  COMMAND analyze ${OF} --gpu 24G --offload activations --recompute all)
memplan_cli_test("verify refuses an --offload plan, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: verify: the runtime does not execute --offload optimizer[^\n]*\n$"
  COMMAND verify ${OF} --batch 4 --offload optimizer)

# --offload-hooks (torchtune's OffloadActivations, analyzer/derivation/saved_tensor_offload.h).
# tiny_mlp at micro-batch 8: MatMul x W1 saves x [batch,16] (W1 needs no saving: x needs no
# gradient), Relu saves h2 [batch,32] (8*32*4 = 1024 B: moves); fc2 (MatMul W2 + Add b2) is the
# output head under NoOpManager and the loss runs outside the context. x has 8*16*4 = 512 B, which
# torch keeps (under 1024), but one derived program serves every micro-batch, so a size that
# depends on the batch counts as large (saved_tensor_offload.h): 512 + 1024 = 1536 B on the host.
memplan_cli_test("analyze --offload-hooks torchtune-streams names the hooks in the Host line" EXPECT_EXIT 0
  EXPECT_OUTPUT "Host     1.5 KiB pinned \\(saved activations offloaded by torchtune's OffloadActivations \\(use_streams=True, enable_activation_offloading\\)"
  COMMAND analyze ${OF} --gpu 24G --precision fp32 --micro-batch 8 --offload activations --offload-hooks torchtune-streams)
memplan_cli_test("analyze --offload-hooks torchtune JSON: plan.offload.hooks, 1536 bytes moved" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"offload\": {[ \n]*\"mode\": \"activations\",[ \n]*\"hooks\": \"torchtune\",[^}]*}[^}]*\"host_saved_activation_bytes\": 1536,"
  COMMAND analyze ${OF} --gpu 24G --precision fp32 --micro-batch 8 --offload activations --offload-hooks torchtune --json)
memplan_cli_test("--offload-hooks bogus is one line listing the choices" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --offload-hooks: expected save-on-cpu, torchtune, torchtune-streams or unsloth, got 'bogus'\n$"
  COMMAND analyze ${OF} --gpu 24G --offload activations --offload-hooks bogus)
memplan_cli_test("--offload-hooks torchtune without --offload activations is one line" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --offload-hooks torchtune moves saved activations; it needs --offload activations\n$"
  COMMAND analyze ${OF} --gpu 24G --offload-hooks torchtune)
memplan_cli_test("--offload-hooks torchtune with node recompute is one line" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --offload activations --offload-hooks torchtune is planned without recompute or with torchtune's activation checkpointing: --recompute all --recompute-unit module \\(non-reentrant\\)\n$"
  COMMAND analyze ${OF} --gpu 24G --offload activations --offload-hooks torchtune --recompute all --recompute-unit node)
memplan_cli_test("--offload-hooks torchtune cannot be exported to the PyTorch loop" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: export: pytorch cannot express --offload-hooks torchtune \\(torchtune's OffloadActivations\\), which the plan modelled; export with --to torchtune\n$"
  COMMAND analyze ${OF} --gpu 24G --precision fp32 --offload activations --offload-hooks torchtune --export pytorch)

# --offload-hooks unsloth (Unsloth's offloaded gradient checkpointing, saved_tensor_offload.h).
# gpt_opset17 (two blocks, width 64) at micro-batch 32, seq 32: each block's input is
# [32, 32, 64] fp32 = 262,144 B, stored as bfloat16: 131,072 B (a --dim-dependent size counts as
# over MINIMUM_SIZE). blocks.0's input moves; blocks.1 is the last checkpointed layer and keeps
# its own: 131,072 B = 128.0 KiB on the host.
set(UNSLOTH_PLAN ${MEMPLAN_TEST_FIXTURES}/gpt_opset17.onnx --micro-batch 32 --dim seq=32
    --precision fp32 --allocator exact --attention eager --gpu 24G --recompute all
    --recompute-unit module --recompute-reentrant --offload activations --offload-hooks unsloth)
memplan_cli_test("analyze --offload-hooks unsloth names Unsloth in the Host line, one block's input moved" EXPECT_EXIT 0
  EXPECT_OUTPUT "Host     128.0 KiB pinned \\(saved activations offloaded by Unsloth's offloaded gradient checkpointing"
  COMMAND analyze ${UNSLOTH_PLAN})
memplan_cli_test("analyze --offload-hooks unsloth JSON: plan.offload.hooks, 131072 bytes moved" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"offload\": {[ \n]*\"mode\": \"activations\",[ \n]*\"hooks\": \"unsloth\",[^}]*}[^}]*\"host_saved_activation_bytes\": 131072,"
  COMMAND analyze ${UNSLOTH_PLAN} --json)
memplan_cli_test("--offload-hooks unsloth without reentrant module recompute is one line" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --offload activations --offload-hooks unsloth is Unsloth's reentrant checkpointing of every layer: add --recompute all --recompute-unit module --recompute-reentrant\n$"
  COMMAND analyze ${OF} --gpu 24G --offload activations --offload-hooks unsloth --recompute all --recompute-unit module)
memplan_cli_test("--offload-hooks unsloth cannot be exported: the refusal says what Unsloth users set" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: export: hf-trainer cannot express --offload-hooks unsloth \\(Unsloth's offloaded gradient checkpointing\\), which the plan modelled; Unsloth is not an export target: set use_gradient_checkpointing=\"unsloth\" in FastLanguageModel.get_peft_model \\(max_seq_length >= 512\\)\n$"
  COMMAND analyze ${UNSLOTH_PLAN} --export hf-trainer)
