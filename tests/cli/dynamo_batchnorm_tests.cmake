# A BatchNorm in train() exported by torch.onnx.export(dynamo=True): torch_lib writes it in
# inference mode and optimize=True folds it into the Conv (graph/folded_batch_norm.h).
# tests/fixtures/make_dynamo_batchnorm_fixture.py: Conv2d(3, 4, 3), BatchNorm2d(4), ReLU on
# x [2, 3, 8, 8], loss sum, fp32. Saved, derived by hand: the Conv keeps x (384 elements,
# 1,536 B), native_batch_norm its input y [2, 4, 6, 6] (288 elements, 1,152 B) and save_mean,
# save_invstd [4] (16 B each), relu its result (1,152 B): 3,872 B. The folded file as written
# (Conv, Relu) gave 2,688; the unfolded one had the same 3,872 but was called an inference
# export. Parameters 4*3*9 + 4 + 4 + 4 = 120.
memplan_cli_test("a BatchNorm the dynamo exporter folded into its Conv is planned as trained" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"saved_activation_bytes\": 3872,"
  COMMAND analyze ${MEMPLAN_TEST_FIXTURES}/dynamo_conv_bn_relu.onnx --gpu 80G --precision fp32
          --recompute none --loss sum --json)
memplan_cli_test("a folded BatchNorm's weight and bias count as parameters" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"parameter_count\": 120,"
  COMMAND analyze ${MEMPLAN_TEST_FIXTURES}/dynamo_conv_bn_relu.onnx --gpu 80G --precision fp32
          --recompute none --loss sum --json)
memplan_cli_test("a dynamo BatchNorm whose statistics torch updated is not an inference export" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"inference_export\": false,"
  COMMAND analyze ${MEMPLAN_TEST_FIXTURES}/dynamo_conv_bn_relu_unoptimized.onnx --gpu 80G
          --precision fp32 --recompute none --loss sum --json)
memplan_cli_test("an unfolded dynamo BatchNorm saves what autograd saves" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"saved_activation_bytes\": 3872,"
  COMMAND analyze ${MEMPLAN_TEST_FIXTURES}/dynamo_conv_bn_relu_unoptimized.onnx --gpu 80G
          --precision fp32 --recompute none --loss sum --json)
