# A dynamo export's module scopes (node metadata pkg.torch.onnx.name_scopes) name its nodes at
# import (graph/torch_scoped_names.h): the module recompute unit, which refused such a model
# ("no node of this model has an indexed module scope"), checkpoints its two blocks, and the
# export lists them. tests/fixtures/make_dynamo_scoped_fixture.py: blocks = Sequential(Block,
# Block), each fc1 -> relu -> fc2; "all" recomputes each block's fc1 and relu (fc2's output is the
# block's output, kept as the next block's input).
memplan_cli_test("analyze of a dynamo export checkpoints its blocks by module" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"recompute_modules\": \\[\n *\"blocks.0\",\n *\"blocks.1\"\n *\\]"
  COMMAND analyze ${MEMPLAN_TEST_FIXTURES}/dynamo_scoped_blocks.onnx --gpu 24G --micro-batch 64
          --recompute all --recompute-unit module --precision fp32 --json)
memplan_cli_test("the PyTorch export of a dynamo export's module plan checkpoints its blocks" EXPECT_EXIT 0
  EXPECT_OUTPUT "CHECKPOINTED_MODULES = \\[\n    \"blocks.0\",\n    \"blocks.1\",\n\\]"
  COMMAND analyze ${MEMPLAN_TEST_FIXTURES}/dynamo_scoped_blocks.onnx --gpu 24G --micro-batch 64
          --recompute all --recompute-unit module --precision fp32 --export pytorch)
# A node plan of the same export recomputes the head's Gemm, named "node_linear_5" by the FX
# graph: the selective-checkpoint policy names its ATen ops (addmm, mm) from the recorded op type
# (plan.recompute_op_types), where the name alone left the module with none.
memplan_cli_test("the PyTorch export of a dynamo export's node plan names its Gemm's ATen ops" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"head\": \\[\"aten.addmm\", \"aten.mm\"\\]"
  COMMAND analyze ${MEMPLAN_TEST_FIXTURES}/dynamo_scoped_blocks.onnx --gpu 24G --micro-batch 64
          --recompute all --recompute-unit node --precision fp32 --export pytorch)
