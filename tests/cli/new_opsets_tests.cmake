# Models newer than this build's libonnx (opset 18, opset 23; tests/fixtures/*.textproto, encoded
# by make_textproto_fixtures.sh): `memplan analyze` plans them (exit 0) and `inspect` says that
# memplan's own checks and shape rules stood in for libonnx's.
set(F ${MEMPLAN_TEST_FIXTURES})

memplan_cli_test("analyze an opset-18 model (ReduceMean axes as input), exit 0" EXPECT_EXIT 0
  COMMAND analyze ${F}/opset18_block.onnx --gpu 24G --micro-batch 4 --dim seq=128)
memplan_cli_test("analyze an opset-23 model (RMSNormalization, Attention), exit 0" EXPECT_EXIT 0
  COMMAND analyze ${F}/opset23_block.onnx --gpu 24G --micro-batch 4 --dim seq=128)
memplan_cli_test("inspect an opset-23 model says libonnx was not run" EXPECT_EXIT 0
  EXPECT_OUTPUT "ONNX checker and shape inference not run \\(the model imports ai.onnx opset 23"
  COMMAND inspect ${F}/opset23_block.onnx --json)
# 32 (scale) + 4 * 32 * 32 (projections) = 4128 parameters.
memplan_parameter_count_test("inspect an opset-23 model counts its parameters" ${F}/opset23_block.onnx 4128)
# Its 3D Attention (4 heads packed in the hidden axis of 32) runs as the fused sdpa node.
memplan_cli_test("the opset-23 3D Attention op is fused under --attention auto" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"attention\": {\n      \"mode\": \"sdpa\",\n      \"requested\": \"auto\",\n      \"fused\": 1,"
  COMMAND analyze ${F}/opset23_block.onnx --gpu 24G --micro-batch 4 --dim seq=128 --json)
# verify runs it on the CPU: RMSNormalization's kernel (runtime/cpu/kernels/normalization.cc,
# against torch in kernel_reference_test.cc) and the fused attention. Its peak is the Adam step:
# 4128 fp32 parameters, their gradients, two Adam states and the step's one-tensor transient,
# 4128 * 4 * (1 + 1 + 2 + 1) = 82560 bytes, measured as predicted.
memplan_cli_test("verify runs the opset-23 block on the CPU: memory exact, checks pass"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "\\(82560 B\\) +measured [^\n]*\\(82560 B\\) +exact match +PASS.*result: PASS"
  COMMAND verify ${F}/opset23_block.onnx --micro-batch 2 --dim seq=4 --loss mse)
# verify runs RotaryEmbedding on the CPU (runtime/cpu/kernels/rotary.cc, against torch in
# kernel_reference_test.cc): tests/fixtures/opset23_rotary.textproto, MatMul Wq[32, 32] then a 3D
# RotaryEmbedding with position ids. Its one parameter is Wq, 1024 fp32 values; the peak is the
# Adam step: Wq, its gradient, two Adam states and the step's one-tensor transient,
# 1024 * 4 * (1 + 1 + 2 + 1) = 20480 bytes. Every tensor of the forward and backward is smaller
# than that sum: x, q, y and their gradients are [2, 4, 32] (1024 B each), the gathered cos and sin
# the registry saves [1, 4, 2] (32 B each), so backward's peak is Wq and its gradient plus a few
# KiB.
memplan_cli_test("verify runs an opset-23 RotaryEmbedding on the CPU: memory exact, checks pass"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "\\(20480 B\\) +measured [^\n]*\\(20480 B\\) +exact match +PASS.*result: PASS"
  COMMAND verify ${F}/opset23_rotary.onnx --micro-batch 2 --loss mse)
# verify runs ONNX Runtime's com.microsoft RotaryEmbedding on the CPU (the same kernel, checked
# against torch in kernel_reference_test.cc): tests/fixtures/ms_rotary.textproto, the block above
# with the contrib op, interleaved, and one position offset. The peak is again the Adam step,
# 1024 * 4 * (1 + 1 + 2 + 1) = 20480 bytes: the offset gathers one row per token, the saved cos
# and sin [1, 4, 2] (32 B each) as above, and every other tensor is the same as above.
memplan_cli_test("verify runs a com.microsoft RotaryEmbedding on the CPU: memory exact, checks pass"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "\\(20480 B\\) +measured [^\n]*\\(20480 B\\) +exact match +PASS.*result: PASS"
  COMMAND verify ${F}/ms_rotary.onnx --micro-batch 2 --loss mse)
