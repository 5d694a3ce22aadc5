# --loss-output: the value the loss reads (default: the first graph output). Fixture:
# tests/fixtures/class_and_logits.onnx, x[batch,4] -> MatMul W[4,3] -> logits -> ArgMax -> pred,
# with the int64 pred listed first.
set(F ${MEMPLAN_TEST_FIXTURES})

# No gradient flows from an integer: the first output cannot carry the loss.
memplan_cli_test("a loss on an integer first output is refused, naming it" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: model output 'pred' is int64: a loss needs a floating-point output[^\n]*\n$"
  COMMAND analyze ${F}/class_and_logits.onnx --gpu 24G)
# On the logits W trains: 4 x 3 fp32 = 48 bytes of parameters and 48 of gradients.
memplan_cli_test("--loss-output logits trains W" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"model_state_bytes\": {\n    \"parameters\": 48,\n    \"master_weights\": 0,\n    \"gradients\": 48,"
  COMMAND analyze ${F}/class_and_logits.onnx --gpu 24G
          --loss-output logits --micro-batch 2 --precision fp32 --optimizer sgd --json)
# tiny_mlp: x -> fc1 (W1 16x32, b1 32) -> h1 -> relu -> fc2 (W2 32x4, b2 4) -> y. A loss on h1
# trains fc1 only: (512 + 32) x 4 = 2,176 bytes of gradients of the 676 x 4 = 2,704 of parameters.
memplan_cli_test("--loss-output on an inner value trains only what it reads" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"model_state_bytes\": {\n    \"parameters\": 2704,\n    \"master_weights\": 0,\n    \"gradients\": 2176,"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G
          --loss-output h1 --loss sum --micro-batch 1 --precision fp32 --optimizer sgd --json)
memplan_cli_test("--loss-output names a value the graph lacks" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: loss output 'nope' is not a value of the graph\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G
          --loss-output nope)
memplan_cli_test("--loss-output on a graph input is refused" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: model output 'x' is a graph input, not computed by the model\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G
          --loss-output x)
