# --attention eager|sdpa|auto (docs/attention.md): what is fused, bad input, and the fused
# kernel running under verify.
set(F ${MEMPLAN_TEST_FIXTURES})

memplan_cli_test("--attention sdpa on a model without attention is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --attention sdpa: model 'tiny_mlp.onnx' has no attention memplan recognises[^\n]*\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --attention sdpa)
memplan_cli_test("an unknown --attention is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --attention: expected eager, sdpa or auto, got 'flash'\n$"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4 --attention flash)
memplan_cli_test("--attention auto on a model without attention plans it unchanged" EXPECT_EXIT 0
  EXPECT_OUTPUT "Attn +eager \\(no attention recognised\\)"
  COMMAND analyze ${F}/tiny_mlp.onnx --gpu 24G --batch 4)
# The GPT fixture's two blocks (torch.onnx export, causal Where mask, dropout) are fused by
# default and reported in text and JSON.
memplan_cli_test("gpt attention is fused by default and listed in plan.attention" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"attention\": {\n      \"mode\": \"sdpa\",\n      \"requested\": \"auto\",\n      \"fused\": 2,"
  COMMAND analyze ${F}/gpt_opset17.onnx --gpu 24G --batch 4 --dim seq=32 --json)
memplan_cli_test("--attention eager keeps the exported attention" EXPECT_EXIT 0
  EXPECT_OUTPUT "Attn +eager \\(--attention eager"
  COMMAND analyze ${F}/gpt_opset17.onnx --gpu 24G --batch 4 --dim seq=32 --attention eager)
# The fused node runs on the CPU backend: measured memory equals the prediction and training
# still lowers the loss.
memplan_cli_test("verify transformer with --attention sdpa passes" EXPECT_EXIT 0
  EXPECT_OUTPUT "exact match  PASS.*falls  PASS.*result: PASS"
  COMMAND verify ${F}/transformer_opset17.onnx --batch 2 --dim seq=8 --attention sdpa --steps 2)
