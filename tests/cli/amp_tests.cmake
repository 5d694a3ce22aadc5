# Regexes keep [ and ] balanced: CMake's list splitting counts brackets even when escaped.
# Issue 10 (amp): --amp-mode regimes, --headroom. Hand-derived byte counts are in
# tests/analyzer/precision/precision_amp_regime_test.cc and planner_headroom_test.cc; these pin the CLI.
set(F ${MEMPLAN_TEST_FIXTURES})

# Each regime runs on the CPU runtime: measured memory equals the prediction, the loss falls.
foreach(mode autocast master-weights pure)
  memplan_cli_test("verify transformer bf16 --amp-mode ${mode} passes" EXPECT_EXIT 0
    EXPECT_OUTPUT "exact match  PASS.*falls  PASS.*result: PASS"
    COMMAND verify ${F}/transformer_opset17.onnx --batch 2 --dim seq=8 --precision bf16
            --amp-mode ${mode} --steps 2)
endforeach()
memplan_cli_test("verify transformer fp16 autocast with recompute passes" EXPECT_EXIT 0
  EXPECT_OUTPUT "exact match  PASS.*recompute   bitwise identical  PASS.*result: PASS"
  COMMAND verify ${F}/transformer_opset17.onnx --batch 2 --dim seq=8 --precision fp16
          --amp-mode autocast --recompute all --steps 2)

# The JSON names the regime and its model state totals. tiny_mlp under autocast: fp32 parameters
# and gradients, no master copy.
memplan_cli_test("analyze --json has plan.amp_mode and model_state_bytes" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"model_state_bytes\": {\n    \"parameters\": [0-9]+,\n    \"master_weights\": 0,\n    \"gradients\": [0-9]+,\n    \"optimizer_state\": [0-9]+\n  }.*\"precision\": \"bf16\",\n    \"amp_mode\": \"autocast\""
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --precision bf16 --json)
memplan_cli_test("analyze text names the regime's state" EXPECT_EXIT 0
  EXPECT_OUTPUT "State    master-weights: parameters [^\n]+, master weights [^\n]+, gradients"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --precision fp16 --amp-mode master-weights)

# Bad input: one line, exit 2.
memplan_cli_test("--amp-mode with fp32 is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --amp-mode autocast needs mixed precision[^\n]*\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --precision fp32 --amp-mode autocast)
memplan_cli_test("unknown --amp-mode is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --amp-mode: expected autocast, master-weights or pure, got 'apex'\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --precision bf16 --amp-mode apex)
memplan_cli_test("--amp-mode pure with fp16 is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --amp-mode pure keeps bf16 parameters[^\n]*\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --precision fp16 --amp-mode pure)
memplan_cli_test("--headroom over 50% is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --headroom: must be between 0% and 50% of the budget, got '60%'\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --headroom 60%)
memplan_cli_test("negative --headroom is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --headroom: must be between 0% and 50% of the budget, got '-5%'\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --headroom -5%)
memplan_cli_test("negative --headroom size is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --headroom: must not be negative, got '-1G'\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --headroom -1G)
memplan_cli_test("--headroom larger than half the budget is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --headroom 20G is more than half of the [^\n]+ budget\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --headroom 20G)

# Exports emit the regime the plan modelled and refuse one their framework cannot express.
memplan_cli_test("export deepspeed refuses an autocast plan, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*deepspeed cannot express --amp-mode autocast[^\n]*re-plan with --amp-mode master-weights\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --precision fp16 --amp-mode autocast
          --export deepspeed)
# Without --amp-mode, analyze --export deepspeed plans the regime DeepSpeed runs: fp16 working
# weights plus fp32 masters, so the config's fp16 section is the plan that was simulated.
memplan_cli_test("analyze --export deepspeed without --amp-mode plans master weights" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"fp16\": {\n *\"enabled\": true"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --precision fp16 --export deepspeed)
memplan_cli_test("analyze --export deepspeed without --amp-mode: JSON says master-weights"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "\"amp_mode\": \"master-weights\""
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --precision fp16 --export deepspeed
          --export-out ${CMAKE_CURRENT_BINARY_DIR}/amp_default_ds.json --json)
memplan_cli_test("export pytorch of a pure plan converts the model to bf16" EXPECT_EXIT 0
  EXPECT_OUTPUT "model.to\\(device=device, dtype=torch.bfloat16\\)"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --precision bf16 --amp-mode pure
          --export pytorch)
memplan_cli_test("export lightning of a pure plan is bf16-true" EXPECT_EXIT 0
  EXPECT_OUTPUT "precision=\"bf16-true\""
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --precision bf16 --amp-mode pure
          --export lightning)
memplan_cli_test("export hf-trainer refuses a master-weights plan, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*hf-trainer cannot express --amp-mode master-weights[^\n]*re-plan with --amp-mode autocast\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --precision bf16
          --amp-mode master-weights --export hf-trainer)

# torch.autocast on the CPU (Debian's torch 1.13) keeps fp32 weights and gradients and saves
# bf16 casts; memplan's autocast plan of the same MLP predicts the same saved bytes and state.
# Skipped (77) without /usr/bin/python3 and torch.
add_test(NAME "cli: torch.autocast on CPU matches memplan's autocast plan"
         COMMAND sh -c "if [ -x /usr/bin/python3 ]; then exec /usr/bin/python3 \"$0\" \"$1\"; else exit 77; fi"
                 ${CMAKE_SOURCE_DIR}/tools/compare_autocast.py $<TARGET_FILE:memplan>)
set_tests_properties("cli: torch.autocast on CPU matches memplan's autocast plan"
                     PROPERTIES SKIP_RETURN_CODE 77)

# --allocator expandable (expandable_segments:True) plans against its reserved bytes.
memplan_cli_test("analyze --allocator expandable names the model" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"allocator\": \"expandable\""
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --allocator expandable --json)
memplan_cli_test("unknown --allocator is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --allocator: expected caching, expandable or exact, got 'slab'\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --allocator slab)

# The GPU table's per-generation figures: H100 (Hopper) has 32 MiB cuBLAS workspaces, two of them
# in the 512 MiB context (448 MiB CUDA context = 469762048 B).
memplan_cli_test("analyze --json splits the H100 context by generation" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"generation\": \"Hopper\",\n    \"cuda_context_bytes\": 469762048,\n    \"cublas_workspace_bytes\": 33554432,\n    \"cublas_workspaces\": 2"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu H100 --batch 4 --json)

# --amp-mode pure is bf16 only: --precision auto plans bf16 for it, and refuses a GPU without bf16.
memplan_cli_test("--amp-mode pure with auto precision plans bf16" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"precision\": \"bf16\",\n    \"amp_mode\": \"pure\""
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --amp-mode pure --json)
memplan_cli_test("--amp-mode pure on a GPU without bf16 is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --amp-mode pure needs bf16, which T4 lacks[^\n]*\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu T4 --amp-mode pure)

# The headroom: the recommendation under budget - 5%, the absolute maximum beside it. (16G: at
# 24G the largest micro-batch under the headroom, m=32767, is also the largest that fits since
# issue 41's Python-reference holds; the headroom binds at 16G: m=21631 under it, 22783 fits.)
# --knee 0: this pins the headroom rule, which the throughput knee (the default since issue 43)
# would hide behind a smaller m.
memplan_cli_test("analyze text says how close to the edge the plan is" EXPECT_EXIT 0
  EXPECT_OUTPUT "\\(largest under the headroom\\).*headroom [^\n]+ \\(5% of the budget\\) kept free; the largest micro-batch that fits is m=[0-9]+ at (9[5-9]|100)% of the budget"
  COMMAND analyze ${F}/transformer_opset17.onnx --gpu 16G --dim seq=128 --precision bf16
          --recompute none --knee 0)
memplan_cli_test("analyze --json reports max_micro_batch beside micro_batch" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"headroom_bytes\": [1-9][0-9]+,.*\"micro_batch\": [0-9]+,\n    \"max_micro_batch\": [0-9]+,"
  COMMAND analyze ${F}/transformer_opset17.onnx --gpu 24G --dim seq=128 --precision bf16
          --recompute none --json)
