# Issue 44: a loss over several outputs (--loss-output a,b with --loss one kind or one per output)
# and the class axis of logits transposed after it. Fixtures: tests/fixtures/loss_terms
# (make_loss_term_fixtures.py). two_heads: x[batch, 8] -> MatMul W0[8, 8] -> Relu -> r; logits =
# r @ Wc[8, 5]; boxes = Sigmoid(r @ Wb[8, 4]). transposed_logits: x[batch, 6, 8] -> MatMul W[8, 5]
# -> Transpose(0, 2, 1) -> logits[batch, 5, 6].
set(LT ${MEMPLAN_TEST_FIXTURES}/loss_terms)
set(MEMPLAN_TWO_HEADS --loss-output logits,boxes --loss cross_entropy,mse)

# (The JSON regex avoids '[': an unbalanced bracket stops CMake splitting the arguments after it.)
# Saved at micro-batch 2, fp32: x 2*8*4 = 64 (W0's gradient), r 64 (Relu's output, both heads'
# operand), the class term's log-probabilities [2, 5] 40 and int64 labels [2] 16: 184 B with the
# class head alone; the box term adds boxes (Sigmoid's output, mse's input) [2, 4] 32 and its
# float target [2, 4] 32: 248 B.
memplan_cli_test("loss terms: the class head alone keeps 184 B" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"saved_activation_bytes\": 184,"
  COMMAND analyze ${LT}/two_heads.onnx --gpu 24G --micro-batch 2 --precision fp32
          --recompute none --json)
memplan_cli_test("loss terms: both heads keep 248 B and the JSON names each term" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"saved_activation_bytes\": 248,.*\"loss\": \"cross_entropy\",\n *\"loss_terms\": .\n *{\n *\"output\": \"logits\",\n *\"loss\": \"cross_entropy\"\n *},\n *{\n *\"output\": \"boxes\",\n *\"loss\": \"mse\""
  COMMAND analyze ${LT}/two_heads.onnx --gpu 24G --micro-batch 2 --precision fp32
          --recompute none --json ${MEMPLAN_TWO_HEADS})
memplan_cli_test("loss terms: the text report names the sum" EXPECT_EXIT 0
  EXPECT_OUTPUT "loss cross_entropy\\(logits\\) \\+ mse\\(boxes\\)"
  COMMAND analyze ${LT}/two_heads.onnx --gpu 24G --micro-batch 2 ${MEMPLAN_TWO_HEADS})
memplan_cli_test("loss terms: verify runs the sum and passes" EXPECT_EXIT 0
  EXPECT_OUTPUT "loss cross_entropy\\(logits\\) \\+ mse\\(boxes\\).*memory [^\n]*exact match  PASS.*result: PASS"
  COMMAND verify ${LT}/two_heads.onnx --batch 4 ${MEMPLAN_TWO_HEADS})
# verify --plan reads plan.loss_terms (two_heads_plan.json: `analyze --json` of the command above
# with --optimizer sgd): the same two terms run, the text names them.
memplan_cli_test("loss terms: verify --plan runs the plan's terms" EXPECT_EXIT 0
  EXPECT_OUTPUT "loss cross_entropy\\(logits\\) \\+ mse\\(boxes\\).*result: PASS"
  COMMAND verify --plan ${LT}/two_heads_plan.json ${LT}/two_heads.onnx)
memplan_cli_test("loss terms: one loss per output or one for all" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --loss names 3 losses for 2 --loss-output values: name one loss, or one per loss output\n$"
  COMMAND analyze ${LT}/two_heads.onnx --gpu 24G --loss-output logits,boxes
          --loss cross_entropy,mse,sum)
memplan_cli_test("loss terms: an output named twice is refused" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: loss output 'logits' is named twice\n$"
  COMMAND analyze ${LT}/two_heads.onnx --gpu 24G --loss-output logits,logits)
memplan_cli_test("loss terms: --fused-loss with several outputs is refused" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --fused-loss fuses one LM head with its cross entropy; with several --loss-output values drop --fused-loss\n$"
  COMMAND analyze ${LT}/two_heads.onnx --gpu 24G --fused-loss ${MEMPLAN_TWO_HEADS})
memplan_cli_test("loss terms: an unknown loss in the list is refused" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*unknown loss 'bogus'[^\n]*\n$"
  COMMAND analyze ${LT}/two_heads.onnx --gpu 24G --loss-output logits,boxes
          --loss cross_entropy,bogus)

# [N, T, C] logits transposed to [N, C, T]: the classes are dimension 1 (C = 5), the labels
# [N, T]. Saved at micro-batch 4, fp32: x 4*6*8*4 = 768 (W's gradient), the log-probabilities
# [4, 5, 6] 480 and the int64 labels [4, 6] 192: 1,440 B (read as [batch, seq, vocab] the labels
# would have been [4, 5], 160 B).
memplan_cli_test("transposed logits: labels [N, T], classes at 1" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"saved_activation_bytes\": 1440,"
  COMMAND analyze ${LT}/transposed_logits.onnx --gpu 24G --micro-batch 4 --precision fp32
          --recompute none --json)
memplan_cli_test("transposed logits: verify passes" EXPECT_EXIT 0
  EXPECT_OUTPUT "result: PASS"
  COMMAND verify ${LT}/transposed_logits.onnx --batch 4)
