# --fused-loss (analyzer/fused_loss_plan.h): the LM head and cross entropy planned as Liger's fused
# linear cross entropy; bad input; verify and exports.
set(F ${MEMPLAN_TEST_FIXTURES})
set(Z ${MEMPLAN_ZOO_DIR})

# lm_head.onnx: x [b, 16, 32] -> MatMul W1 [32, 32] -> h -> MatMul W [32, 100] -> logits, fp32.
# Saved at b = 2, derived in tests/analyzer/fused_loss_plan_test.cc:
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
memplan_cli_test("verify refuses a --fused-loss plan in one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --fused-loss: the runtime does not execute Liger's fused linear cross entropy[^\n]*\n$"
  COMMAND verify ${F}/lm_head.onnx --batch 2 --fused-loss)

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
                 ${CMAKE_SOURCE_DIR}/tests/analyzer/fused_loss_reference.py $<TARGET_FILE:memplan>
                 ${MEMPLAN_TEST_FIXTURES})
set_tests_properties("cli: --fused-loss matches a Liger-style torch reference"
                     PROPERTIES SKIP_RETURN_CODE 77)
