# Per-pixel cross entropy on a segmentation map (tests/fixtures/seg_net.onnx, logits
# [batch, 5, 8, 8], classes at dimension 1). At micro-batch 2 in fp32 the saved bytes are, by hand:
# x 2*3*8*8*4 = 1536 (enc Conv's input) + r 2*4*8*8*4 = 2048 (Relu's output, head Conv's input)
# + log-probs 2*5*8*8*4 = 2560 + labels 2*8*8*8 = 1024 (int64 per pixel) = 7168. PyTorch 1.13
# autograd saves 7172 for the same net and F.cross_entropy (saved-tensor hooks, per storage): the
# 4 more are nll_loss2d's total_weight scalar, which the registry does not model.
set(F ${MEMPLAN_TEST_FIXTURES})

memplan_cli_test("analyze plans per-pixel cross entropy over [N, C, H, W]" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"saved_activation_bytes\": 7168,"
  COMMAND analyze ${F}/seg_net.onnx --gpu 24G --micro-batch 2 --precision fp32
          --loss cross_entropy --json)
memplan_cli_test("verify runs per-pixel cross entropy on the cpu runtime" EXPECT_EXIT 0
  COMMAND verify ${F}/seg_net.onnx --batch 2 --global-batch 4 --loss cross_entropy
          --optimizer adam --steps 3)
