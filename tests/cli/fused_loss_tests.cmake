# --fused-loss (analyzer/derivation/fused_loss_plan.h): the LM head and cross entropy planned as Liger's fused
# linear cross entropy; bad input; verify and exports.
set(F ${MEMPLAN_TEST_FIXTURES})
set(Z ${MEMPLAN_ZOO_DIR})

# lm_head.onnx: x [b, 16, 32] -> MatMul W1 [32, 32] -> h -> MatMul W [32, 100] -> logits, fp32.
# Saved at b = 2, derived in tests/analyzer/derivation/fused_loss_plan_test.cc:
#   unfused: x 4096 + h 4096 + fp32 log-probabilities 2*16*100*4 = 12800 + labels 2*16*8 = 256
#            = 21248
#   fused:   x 4096 + grad_input 4096 + grad_weight 32*100*4 = 12800 = 20992
# Chunk: BT = 32 rows, cdiv(100, 32) = 4, cdiv(32, 4) = 8 rows (a power of two).
memplan_cli_test("lm_head without --fused-loss saves the log-probabilities" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"saved_activation_bytes\": 21248,.*\"loss\": \"cross_entropy\",.*\"fused_loss\": false"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32 --recompute none --json)
memplan_cli_test("lm_head with --fused-loss saves the gradients instead" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"saved_activation_bytes\": 20992,.*\"loss\": \"cross_entropy\",.*\"fused_loss\": true,\n    \"fused_loss_chunk_rows\": 8,"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32 --recompute none
          --fused-loss --json)
memplan_cli_test("--fused-loss names the fused head and its chunk in the text report" EXPECT_EXIT 0
  EXPECT_OUTPUT "Loss +fused linear cross entropy \\(Liger\\): head /lm_head/MatMul, logits never materialised, chunk 8 of 32 rows"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32 --recompute none
          --fused-loss)
# GPT-2 small's tied head (Transpose(wte) -> MatMul) at b = 3, seq 1024: BT = 3072,
# cdiv(50257, 768) = 66, cdiv(3072, 66) = 47 -> 64 rows (the power of two matters).
memplan_cli_test("zoo gpt2_small --fused-loss fuses the tied head, chunk 64 of 3072 rows"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "Loss +fused linear cross entropy \\(Liger\\): head /lm_head/MatMul, [^\n]*chunk 64 of 3072 rows"
  COMMAND analyze ${Z}/gpt2_small.onnx --gpu A100-80GB --batch 3 --dim seq=1024
          --precision fp32 --recompute none --fused-loss)

# Bad input: one line, exit 2.
memplan_cli_test("--fused-loss on a segmentation CNN (mse by default) is one line, exit 2"
  EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --fused-loss: fuses an LM head with cross entropy, but the loss of model 'seg_net.onnx'[^\n]* is mse[^\n]*\n$"
  COMMAND analyze ${F}/seg_net.onnx --gpu 24G --batch 2 --fused-loss)
memplan_cli_test("--fused-loss with per-pixel cross entropy is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --fused-loss: output '[^']*' of model 'seg_net.onnx' is not \\[batch, classes\\] or \\[batch, seq, vocab\\] logits \\(rank 4\\)\n$"
  COMMAND analyze ${F}/seg_net.onnx --gpu 24G --batch 2 --loss cross_entropy --fused-loss)

# verify runs the fused node on the CPU reference kernel (runtime/cpu/kernels/fused_loss.cc).
# lm_head at b = 2, fp32, Adam, no accumulation; the peak is the fused node's forward Begin of a
# step after the first (the Adam states exist, the gradients of the last step were set to None):
#   parameters W1 32*32*4 = 4096 + W 32*100*4 = 12800                          16896
#   Adam exp_avg + exp_avg_sq, 2 * 16896                                        33792
#   micro-batch x 2*16*32*4 = 4096, labels 2*16 int64 = 256                      4352
#   h = x @ W1 [2, 16, 32] fp32 (the fused node's input)                         4096
#   the fused node's output (the fp32 loss) 4, saved grad_input [32, 32] 4096
#   and grad_weight [32, 100] 12800                                             16900
#   forward workspace (fused_loss_ops.cc): logits tile 8 rows * 100 * 4 = 3200,
#   loss_1d 32*4 = 128, target_mask 32, the [V, H] mm product 100*32*4 = 12800  16160
#   total                                                                       92196
# The fused-vs-unfused check compares every gradient and the loss within the fp32 bound 1e-5.
memplan_cli_test("verify --fused-loss runs lm_head on the CPU kernel, memory exact at 92196 B"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "loss sum \\(of the fused linear cross entropy\\).*memory      predicted [^\n]*\\(92196 B\\)  measured [^\n]*\\(92196 B\\)  exact match  PASS.*fused loss  max rel error [^\n]* \\(bound 1e-05\\)  PASS.*falls  PASS.*result: PASS"
  COMMAND verify ${F}/lm_head.onnx --batch 2 --fused-loss)
memplan_cli_test("verify --fused-loss --json reports fused_loss_equivalence" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"loss\": \"sum\",.*\"fused_loss\": true\n  \\},.*\"measured_peak_bytes\": 92196,.*\"fused_loss_equivalence\": \\{\n    \"checked\": true,\n    \"passed\": true,.*\"passed\": true\n\\}"
  COMMAND verify ${F}/lm_head.onnx --batch 2 --fused-loss --json)
memplan_cli_test("verify --fused-loss with accumulation and recompute passes every check"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "exact match  PASS.*gradients   max rel error [^\n]*PASS.*recompute   bitwise identical  PASS.*fused loss  max rel error [^\n]*PASS.*result: PASS"
  COMMAND verify ${F}/lm_head.onnx --batch 2 --global-batch 4 --recompute all --fused-loss)
# A GPT (tests/fixtures/gpt_opset17.onnx) whose head is nn.Linear without bias, MatMul(h,
# Transpose(W)): the kernel reads its weight as [V, H]; every one of its 31 parameters' gradients
# is compared with the unfused graph's.
memplan_cli_test("verify --fused-loss on a GPT with a transposed head passes every check"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "exact match  PASS.*fused loss  max rel error [^\n]*PASS\n[^\n]*31 parameter gradients and the loss.*result: PASS"
  COMMAND verify ${F}/gpt_opset17.onnx --batch 2 --dim seq=8 --fused-loss)
# bf16: the kernel rounds the logits tile, its gradient and each chunk's grad_weight to bf16; the
# unfused graph rounds its logits and their gradient: within the bf16 accumulation bound 5e-2.
memplan_cli_test("verify --fused-loss --precision bf16 passes within the bf16 bound" EXPECT_EXIT 0
  EXPECT_OUTPUT "exact match  PASS.*fused loss  max rel error [^\n]* \\(bound 0.05\\)  PASS.*result: PASS"
  COMMAND verify ${F}/lm_head.onnx --batch 2 --fused-loss --precision bf16)
# A plan JSON with plan.fused_loss (tests/fixtures/plans/lm_head_fused_plan.json, written by hand
# with the keys verify reads): m = 2, k = 2, AdamW. The second micro-batch's fused forward holds
# the first one's parameter gradients too, 16896 B above the 92196 B above: 109092. Those are
# gradients: W1 [32, 32] (4096 B) and the head's W [32, 100] (12800 B), the latter the saved
# grad_weight whose storage the gradient took over, measured under gradients as predicted.
memplan_cli_test("verify --plan of a fused-loss plan runs it, memory exact at 109092 B"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "\\(109092 B\\)  measured [^\n]*\\(109092 B\\)  exact match  PASS\n[^\n]*\n[^\n]*\n *gradients +predicted +16896  measured +16896\n.*fused loss  max rel error [^\n]*PASS.*result: PASS"
  COMMAND verify ${F}/lm_head.onnx --plan ${F}/plans/lm_head_fused_plan.json)
memplan_cli_test("verify without --fused-loss prints no fused loss check" EXPECT_EXIT 0
  EXPECT_NO_OUTPUT "fused loss"
  COMMAND verify ${F}/lm_head.onnx --batch 2)
memplan_cli_test("verify --fused-loss on a model without an LM head is one line, exit 2"
  EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --fused-loss: fuses an LM head with cross entropy, but the loss of model 'seg_net.onnx'[^\n]* is mse[^\n]*\n$"
  COMMAND verify ${F}/seg_net.onnx --batch 2 --fused-loss)
memplan_cli_test("verify --fused-loss --device cuda is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*\n$"
  COMMAND verify ${F}/lm_head.onnx --batch 2 --fused-loss --device cuda)

# Exports: the HF Trainer switches Liger on; a target without the switch refuses.
memplan_cli_test("--fused-loss exports use_liger_kernel=True to the HF Trainer" EXPECT_EXIT 0
  EXPECT_OUTPUT "    use_liger_kernel=True,\n"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32 --fused-loss
          --export hf-trainer)
memplan_cli_test("--fused-loss export to deepspeed is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: export: deepspeed cannot express --fused-loss[^\n]*\n$"
  COMMAND analyze ${F}/lm_head.onnx --gpu 24G --batch 2 --precision fp32 --fused-loss
          --export deepspeed)

# Liger's algorithm restated in PyTorch (Debian's torch 1.13, CPU): its saved bytes (counted with
# saved_tensors_hooks) and chunk rows against memplan's plan at b = 2, 3, 4, and its gradients
# against the unfused loss. Skipped (77) without /usr/bin/python3 and torch.
add_test(NAME "cli: --fused-loss matches a Liger-style torch reference"
         COMMAND sh -c "if [ -x /usr/bin/python3 ]; then exec /usr/bin/python3 \"$0\" \"$1\" \"$2\"; else exit 77; fi"
                 ${CMAKE_SOURCE_DIR}/tests/analyzer/derivation/fused_loss_reference.py $<TARGET_FILE:memplan>
                 ${MEMPLAN_TEST_FIXTURES})
set_tests_properties("cli: --fused-loss matches a Liger-style torch reference"
                     PROPERTIES SKIP_RETURN_CODE 77)
