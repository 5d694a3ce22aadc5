# --fusions (graph/fusion/fusion_table.h). transformer_opset13.onnx is nn.TransformerEncoder
# exported at opset 13, where torch.onnx writes each LayerNorm out as ReduceMean, Sub, Pow,
# ReduceMean, Add, Sqrt, Div, Mul, Add. Fused back (the default), memplan's saved bytes are what
# PyTorch 1.13 autograd keeps at batch 32, seq 32 (program_saved_reference.py): 9,519,124 bytes
# less 20 bytes of scalars the registry does not model (two float64 attention scales, nll_loss's
# total_weight). --attention eager: the reference ran the encoder's own eager attention.
set(F ${MEMPLAN_TEST_FIXTURES})
set(FUSION_PLAN ${F}/transformer_opset13.onnx --gpu 80GB --micro-batch 32 --dim seq=32
    --precision fp32 --loss cross_entropy --attention eager --json)

memplan_cli_test("analyze fuses an opset-13 LayerNorm: saved bytes match autograd" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"saved_activation_bytes\": 9519104,"
  COMMAND analyze ${FUSION_PLAN})
memplan_cli_test("analyze --fusions none plans the graph as exported" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"saved_activation_bytes\": [0-9]+,"
  EXPECT_NO_OUTPUT "\"saved_activation_bytes\": 9519104,"
  COMMAND analyze ${FUSION_PLAN} --fusions none)
memplan_cli_test("--fusions with an unknown set is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --fusions: expected ops, all, liger or none, got 'some'\n$"
  COMMAND analyze ${F}/transformer_opset13.onnx --gpu 24G --fusions some)
