# `memplan export --to torchtune` and `analyze --export torchtune` (issue 40, item 11): the recipe
# config's fields come from the plan, one test per plan flag the config carries (so a dropped key
# fails), and what torchtune's recipes cannot run is refused in one line. (No square brackets in
# the regexes: CMake would not split the argument list after one.)
set(F ${MEMPLAN_TEST_FIXTURES})
set(TORCHTUNE_OUT ${CMAKE_CURRENT_BINARY_DIR}/torchtune_export)
file(MAKE_DIRECTORY ${TORCHTUNE_OUT})

# gpt_bf16_plan.json: micro-batch 4 x 8 accumulation steps, bf16, recompute, Adam.
memplan_cli_test("export torchtune writes the recipe config of the plan" EXPECT_EXIT 0
  EXPECT_OUTPUT "# Run: tune run full_finetune_single_device --config torchtune_config.yaml\n.*\nbatch_size: 4\n.*\ngradient_accumulation_steps: 8\n.*\ndtype: bf16\nenable_activation_checkpointing: True\n"
  COMMAND export ${F}/plans/gpt_bf16_plan.json --to torchtune)
memplan_cli_test("export torchtune refuses fp16 in one line" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*export: torchtune cannot express --precision fp16[^\n]*\n$"
  COMMAND export ${F}/plans/resnet18_fp16_plan.json --to torchtune)

# analyze --export torchtune plans in torchtune's regime: pure (the model cast to bf16), and the
# unchunked loss on fp32 logits (TransformerDecoder.unembed: self.output(h).float()).
memplan_cli_test("analyze --export torchtune plans the pure regime" EXPECT_EXIT 0
  EXPECT_OUTPUT "\ndtype: bf16\n"
  COMMAND analyze ${F}/gpt_opset17.onnx --dim seq=32 --gpu 24G --precision bf16
          --export torchtune)
memplan_cli_test("analyze --export torchtune plans the unchunked loss in fp32" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"amp_mode\": \"pure\".*\"loss_dtype\": \"fp32\",\n    \"loss_chunks\": 0,"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision bf16 --json
          --export torchtune --export-out ${TORCHTUNE_OUT}/unchunked.yaml)
memplan_cli_test("analyze --export torchtune: fp32 plans dtype fp32" EXPECT_EXIT 0
  EXPECT_OUTPUT "\ndtype: fp32\n"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32 --export torchtune)
memplan_cli_test("analyze --export torchtune carries micro-batch and accumulation" EXPECT_EXIT 0
  EXPECT_OUTPUT "\nbatch_size: 2\n.*\ngradient_accumulation_steps: 4\n"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --micro-batch 2 --global-batch 8
          --precision bf16 --export torchtune)
memplan_cli_test("analyze --export torchtune carries --loss-chunks" EXPECT_EXIT 0
  EXPECT_OUTPUT "\nloss:\n  _component_: torchtune.modules.loss.CEWithChunkedOutputLoss\n  num_output_chunks: 8\n"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision bf16 --loss-chunks 8
          --export torchtune)
memplan_cli_test("analyze --export torchtune carries --optimizer-in-backward" EXPECT_EXIT 0
  EXPECT_OUTPUT "\noptimizer_in_bwd: True\nclip_grad_norm: null\n"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision bf16
          --optimizer-in-backward --export torchtune)
memplan_cli_test("analyze --export torchtune carries the optimizer and its implementation"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "\noptimizer:\n  _component_: torch.optim.AdamW\n  fused: True\n"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision bf16 --optimizer adamw
          --optimizer-impl fused --export torchtune)
memplan_cli_test("analyze --export torchtune carries module recompute" EXPECT_EXIT 0
  EXPECT_OUTPUT "\nenable_activation_checkpointing: True\nenable_activation_offloading: False\n"
  COMMAND analyze ${F}/gpt_opset17.onnx --dim seq=32 --gpu 24G --batch 2 --precision bf16
          --recompute all --recompute-unit module --export torchtune)
memplan_cli_test("analyze --export torchtune without recompute" EXPECT_EXIT 0
  EXPECT_OUTPUT "\nenable_activation_checkpointing: False\n"
  COMMAND analyze ${F}/gpt_opset17.onnx --dim seq=32 --gpu 24G --batch 2 --precision bf16
          --recompute none --export torchtune)
# gpt_opset17's blocks name their projections attn.qkv (q, k and v) and attn.proj (the output).
memplan_cli_test("analyze --export torchtune carries --lora" EXPECT_EXIT 0
  EXPECT_OUTPUT "tune run lora_finetune_single_device .*\n  lora_attn_modules: .'q_proj', 'k_proj', 'v_proj', 'output_proj'.\n  apply_lora_to_mlp: False\n  apply_lora_to_output: False\n  lora_rank: 4\n  lora_alpha: 4.0\n  lora_dropout: 0.0\n"
  COMMAND analyze ${F}/gpt_opset17.onnx --dim seq=8 --gpu 24G --batch 2 --precision bf16
          --lora 4 --lora-targets "attn\\.(qkv|proj)\\.weight" --export torchtune)
memplan_cli_test("analyze --export torchtune carries --base-dtype nf4 (QLoRA)" EXPECT_EXIT 0
  EXPECT_OUTPUT "\n  quantize_base: True"
  COMMAND analyze ${F}/gpt_opset17.onnx --dim seq=8 --gpu 24G --batch 2 --precision bf16
          --lora 4 --lora-targets "attn\\.qkv\\.weight" --base-dtype nf4 --export torchtune)
memplan_cli_test("analyze --export torchtune refuses LoRA no switch names" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: export: torchtune cannot express LoRA on blocks.0.mlp.0 [^\n]*\n$"
  COMMAND analyze ${F}/gpt_opset17.onnx --dim seq=8 --gpu 24G --batch 2 --precision bf16
          --lora 4 --lora-targets "mlp\\.0\\.weight" --export torchtune)
# --parallel auto tries FSDP only, wrapped per block as the distributed recipes shard.
memplan_cli_test("analyze --export torchtune --gpus 8 runs the distributed recipe" EXPECT_EXIT 0
  EXPECT_OUTPUT "# Run: tune run --nproc_per_node 8 full_finetune_distributed --config torchtune_config.yaml\n.*\nfsdp_cpu_offload: False\nfsdp_reshard_after_forward: True\n"
  COMMAND analyze ${F}/gpt_opset17.onnx --dim seq=32 --gpu 24G --gpus 8 --precision bf16
          --export torchtune)
memplan_cli_test("analyze --export torchtune refuses ZeRO" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: export: torchtune cannot express --parallel zero2[^\n]*\n$"
  COMMAND analyze ${F}/gpt_opset17.onnx --dim seq=32 --gpu 24G --gpus 8
          --parallel zero2 --precision bf16 --export torchtune)
memplan_cli_test("export torchtune of a bf16-loss plan without chunks refuses" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: export: torchtune upcasts unchunked logits to fp32[^\n]*--loss-dtype fp32[^\n]*\n$"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision bf16 --loss-dtype bf16
          --export torchtune)
