# A model exported in eval mode is planned as exported and underestimates training memory: the
# warning comes first (before the plan in text, first in the JSON `warnings`) and the JSON marks
# the plan "inference_export": true (issue 16). tiny_resnet.onnx has 3 BatchNormalization nodes in
# inference mode (no training_mode, one output each), as torch.onnx.export writes in eval mode.
set(EVAL_MODEL ${MEMPLAN_TEST_FIXTURES}/tiny_resnet.onnx)

memplan_cli_test("analyze --json lists the inference-export warning first" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"warnings\": .\n *\"3 of 3 BatchNormalization nodes run in inference mode"
  COMMAND analyze ${EVAL_MODEL} --gpu 24G --json)
memplan_cli_test("analyze --json marks an eval-mode export" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"inference_export\": true"
  COMMAND analyze ${EVAL_MODEL} --gpu 24G --json)
memplan_cli_test("analyze text says eval-mode export before the plan" EXPECT_EXIT 0
  EXPECT_OUTPUT "\n\nWARNING: tiny_resnet looks like an inference \\(eval-mode\\) export[^\n]*\n\nPlan "
  COMMAND analyze ${EVAL_MODEL} --gpu 24G)
memplan_cli_test("a training export is not marked" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"inference_export\": false"
  EXPECT_NO_OUTPUT "looks like an inference"
  COMMAND analyze ${CMAKE_BINARY_DIR}/zoo/resnet18.onnx --gpu 24G --json)

# torch.onnx's eval export with constant folding (its default) folds BatchNorm into the Conv
# before it: folded_bn_eval.onnx (make_torch_fixtures.py) is Conv -> BatchNorm2d -> ReLU -> Conv,
# whose first Conv now reads initializers onnx::Conv_15 and onnx::Conv_16 and has no BatchNorm
# after it. That is the signal; a CNN without BatchNorm by design (SqueezeNet: biased convs named
# after their modules) is not warned about (tests/graph/model_summary_test.cc).
memplan_cli_test("inspect warns about BatchNorm folded into a Conv" EXPECT_EXIT 0
  EXPECT_OUTPUT "1 of 2 Conv nodes have a weight and bias computed at export"
  COMMAND inspect ${MEMPLAN_TEST_FIXTURES}/folded_bn_eval.onnx --json)
memplan_cli_test("analyze marks a BatchNorm-folded export" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"inference_export\": true"
  COMMAND analyze ${MEMPLAN_TEST_FIXTURES}/folded_bn_eval.onnx --gpu 24G --json)
