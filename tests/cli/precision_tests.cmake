# `memplan analyze --precision ... --fp32-ops/--fp16-ops/--loss-scaling`: the placement summary
# in text, the per-node placement in JSON, and the one-line errors (exit 2) for bad entries.
# tests/fixtures/tiny_mlp.onnx: x -> fc1 (MatMul) -> fc1_bias (Add) -> relu -> fc2 (MatMul) ->
# fc2_bias (Add) -> y, cross-entropy loss. Under fp16: fc1 and fc2 are fp16-safe, the Adds and
# the Relu follow their fp16 inputs: 2 fp16-safe, 0 fp32-required, 3 follow, 0 overridden.
set(PF ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx)

memplan_cli_test("analyze fp16 summarises the placement" EXPECT_EXIT 0
  EXPECT_OUTPUT "Mixed    fp16 placement: 2 fp16-safe, 0 fp32-required, 3 follow their inputs, 0 overridden\n[^\n]*casts: [0-9]+ buffers[^\n]*\n[^\n]*loss scaling dynamic \\(scale 65536"
  COMMAND analyze ${PF} --gpu 24G --batch 8 --precision fp16)
# --fp32-ops MatMul: both MatMuls overridden; the Adds and the Relu then follow fp32.
memplan_cli_test("analyze --fp32-ops names the override and its nodes" EXPECT_EXIT 0
  EXPECT_OUTPUT "0 fp16-safe, 0 fp32-required, 3 follow their inputs, 2 overridden\n *overrides: --fp32-ops MatMul \\(2 nodes\\)"
  COMMAND analyze ${PF} --gpu 24G --batch 8 --precision fp16 --fp32-ops MatMul)
memplan_cli_test("analyze --fp16-ops by node name under bf16" EXPECT_EXIT 0
  EXPECT_OUTPUT "bf16 placement: 2 fp16-safe, 0 fp32-required, 2 follow their inputs, 1 overridden\n *overrides: --fp16-ops relu \\(1 node\\)[^\n]*\n[^\n]*\n *loss scaling none"
  COMMAND analyze ${PF} --gpu 24G --batch 8 --precision bf16 --fp16-ops relu)
memplan_cli_test("analyze --json has the per-node placement" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"name\": \"fc1\",[ \n]*\"op\": \"MatMul\",[ \n]*\"dtype\": \"float32\",[ \n]*\"reason\": \"override\",[ \n]*\"override\": \"MatMul\""
  COMMAND analyze ${PF} --gpu 24G --batch 8 --precision fp16 --fp32-ops MatMul --json)
memplan_cli_test("analyze --loss-scaling static is in the plan" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"loss_scaling\": \"static\",[ \n]*\"loss_scale\": 1024.0,[ \n]*\"loss_scaler_bytes\": 4,"
  COMMAND analyze ${PF} --gpu 24G --batch 8 --precision fp16 --loss-scaling static:1024 --json)

# Errors: one line on stderr naming the entry, exit 2.
memplan_cli_test("--fp32-ops entry naming nothing is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --fp32-ops entry 'Softmax' matches no node name or op type in the graph\n$"
  COMMAND analyze ${PF} --gpu 24G --batch 8 --precision fp16 --fp32-ops Softmax)
memplan_cli_test("--fp16-ops typo suggests the spelling" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --fp16-ops entry 'matmul' matches [^\n]*\\(did you mean 'MatMul'\\?\\)\n$"
  COMMAND analyze ${PF} --gpu 24G --batch 8 --precision auto --fp16-ops matmul)
memplan_cli_test("--fp32-ops is checked in fp32 too" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --fp32-ops entry 'fc9' matches no node[^\n]*\n$"
  COMMAND analyze ${PF} --gpu 24G --batch 8 --fp32-ops fc9)
memplan_cli_test("an entry in both lists is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: 'relu' is in both --fp32-ops and --fp16-ops\n$"
  COMMAND analyze ${PF} --gpu 24G --batch 8 --precision fp16 --fp32-ops relu --fp16-ops relu)
memplan_cli_test("an empty --fp32-ops entry is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --fp32-ops has an empty entry in 'MatMul,,Add'[^\n]*\n$"
  COMMAND analyze ${PF} --gpu 24G --batch 8 --precision fp16 --fp32-ops MatMul,,Add)
memplan_cli_test("a bad --loss-scaling is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --loss-scaling: loss scaling 'often' is not one of[^\n]*\n$"
  COMMAND analyze ${PF} --gpu 24G --batch 8 --precision fp16 --loss-scaling often)
