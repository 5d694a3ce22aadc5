# --fusions liger: Liger Kernel's RMSNorm, SwiGLU and GeGLU as HF's use_liger_kernel=True patches them in
# (README "Fused loss", docs/saved_for_backward.md). The saved and peak bytes are checked against
# torch in recipe_rows_tests.cmake (the tiny Llama's liger_kernels row) and by hand in
# tests/analyzer/derivation/import_fusion_saved_test.cc; here the report, the exports and verify
# on the converted HF Llama (2 layers, one SwiGLU MLP each).
set(HFC ${MEMPLAN_TEST_FIXTURES}/hf_converted)
memplan_cli_test("--fusions liger is named in the text report" EXPECT_EXIT 0
  EXPECT_OUTPUT "\n         Liger Kernel's RMSNorm, SwiGLU and GeGLU \\(--fusions liger; the HF Trainer export sets use_liger_kernel\\)\n"
  COMMAND analyze ${HFC}/llama.onnx --gpu 24G --dim seq=128 --fusions liger)
memplan_cli_test("--fusions liger is plan.fusions in the JSON" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"fusions\": \"liger\","
  COMMAND analyze ${HFC}/llama.onnx --gpu 24G --dim seq=128 --fusions liger --json)
memplan_cli_test("--fusions liger exports use_liger_kernel with its kernels to the HF Trainer"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "    use_liger_kernel=True,\n    liger_kernel_config={\"rope\": True, \"rms_norm\": True, \"swiglu\": True, \"geglu\": True, \"cross_entropy\": False, \"fused_linear_cross_entropy\": False},\n"
  COMMAND analyze ${HFC}/llama.onnx --gpu 24G --dim seq=128 --fusions liger --export hf-trainer)
memplan_cli_test("--fusions liger export to deepspeed is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: export: deepspeed cannot express --fusions liger[^\n]*\n$"
  COMMAND analyze ${HFC}/llama.onnx --gpu 24G --dim seq=128 --fusions liger --export deepspeed
          --amp-mode master-weights)
memplan_cli_test("--fusions liger verifies on the CPU runtime (memplan:SwiGlu's kernel)"
  EXPECT_EXIT 0 EXPECT_OUTPUT "exact match  PASS.*result: PASS"
  COMMAND verify ${HFC}/llama.onnx --batch 2 --dim seq=16 --fusions liger --steps 2)
# Gemma (tests/fixtures/hf_configs/gemma, converted by dynamo): gelu_pytorch_tanh(gate) * up becomes
# memplan:GeGlu, as apply_liger_kernel_to_gemma's geglu=True patches LigerGEGLUMLP in (the fusion
# counts: tests/graph/fusion/hf_converted_fusion_test.cc).
memplan_cli_test("--fusions liger verifies a Gemma on the CPU runtime (memplan:GeGlu's kernel)"
  EXPECT_EXIT 0 EXPECT_OUTPUT "exact match  PASS.*result: PASS"
  COMMAND verify ${HFC}/gemma.onnx --batch 2 --dim seq=16 --fusions liger --steps 2)
