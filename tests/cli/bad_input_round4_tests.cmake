# Bad input, round 4 (issue 45): silent wrong plans after binding, wrong refusals in verify, plan
# readers' ranges. Each error is one `memplan: ` line and exit 2. The regular expressions write '.'
# for ';', which CMake's lists would split on.
set(H4 ${MEMPLAN_TEST_FIXTURES}/hostile)
set(HP4 ${MEMPLAN_TEST_FIXTURES}/plans/hostile)

# Wrong refusal: the graph output is a Split chunk of a weight's output. verify took the chunk's
# base [batch, 8] for the logits and drew labels of 8 classes for a 4-class output ("label 6 is not
# a class in [0, 4)").
memplan_cli_test("verify of a model whose output is a Split chunk after a weight passes"
  EXPECT_EXIT 0 EXPECT_OUTPUT "result: PASS"
  COMMAND verify ${H4}/split_output_is_model_output.onnx --batch 4)

# Silent wrong plans at import: invalid ONNX that libonnx's inference skipped and memplan planned.
memplan_cli_test("analyze of an int64 bias added to a float MatMul is one line, exit 2"
  EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: node 'fc_bias' \\(Add\\): input 0 'h' is float32 but input 1 'bias' is int64. ONNX's Add takes one type T for both \\(the initializer 'bias' would be a constant, never trained\\)\n$"
  COMMAND analyze ${H4}/int64_bias.onnx --gpu 24G)
memplan_cli_test("inspect of a ConvTranspose with a negative output_shape is one line, exit 2"
  EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: node 'up' \\(ConvTranspose\\): output_shape gives spatial axis 0 the size -16. it must be positive\n$"
  COMMAND inspect ${H4}/conv_transpose_negative_output_shape.onnx)
memplan_cli_test("inspect of a Resize by a scale of 0 is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: node 'resize' \\(Resize\\): scales\\[2\\] is 0. a scale must be positive and finite\n$"
  COMMAND inspect ${H4}/resize_scale_zero.onnx)
memplan_cli_test("inspect of an Upsample by a scale of 0 is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: node 'upsample' \\(Upsample\\): scales\\[2\\] is 0. an Upsample scale must be at least 1\n$"
  COMMAND inspect ${H4}/upsample_scale_zero.onnx)
# Shape arithmetic that overflows is named where it overflows (was a generated 'reshape_0' symbol
# downstream).
memplan_cli_test("inspect of shape arithmetic overflowing 64 bits names the Mul, exit 2"
  EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: node 'times_2_62' \\(Mul\\): shape arithmetic overflows 64 bits \\(a value of 'q'\\)\n$"
  COMMAND inspect ${H4}/shape_mul_overflow.onnx)

# Rows beyond a table: ids[batch, seq] read a 16-row position table at arange(seq). seq = 32
# reads row 31 (= 32 - 1); the largest seq inside is 16 (rows 0..15).
memplan_cli_test("analyze --dim seq beyond a position table warns with the largest seq"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "node 'wpe_lookup' \\(Gather\\) reads row 31 of 'wpe', which has 16 rows, at seq = 32: PyTorch raises an index error there. the largest seq this table serves is 16"
  COMMAND analyze ${H4}/position_table.onnx --gpu 24G --batch 2 --dim seq=32)
memplan_cli_test("analyze --json carries the position-table warning" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"warnings\": .\n *\"node 'wpe_lookup' \\(Gather\\) reads row 31"
  COMMAND analyze ${H4}/position_table.onnx --gpu 24G --batch 2 --dim seq=32 --json)
memplan_cli_test("analyze --dim seq at the position table's size does not warn" EXPECT_EXIT 0
  EXPECT_NO_OUTPUT "reads row"
  COMMAND analyze ${H4}/position_table.onnx --gpu 24G --batch 2 --dim seq=16)
# The issue's reproducer: GPT-2 (n_positions 1024) at seq = 4096 reads row 4095.
memplan_cli_test("analyze of GPT-2 at --dim seq=4096 warns of its 1024-row position table"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "node '/wpe/Gather[^']*' \\(Gather\\) reads row 4095 of 'wpe.weight', which has 1024 rows, at seq = 4096: PyTorch raises an index error there. the largest seq this table serves is 1024"
  COMMAND analyze ${MEMPLAN_ZOO_DIR}/gpt2_small.onnx --gpu 80G --batch 1 --dim seq=4096)

# The micro-batch is re-checked like a --dim value: x[batch, 16] -> Reshape [4, 16] holds for a
# batch of 4 only. A micro-batch the search tries (since round 5 every one, here its first, 1) and
# a pinned micro-batch are both refused naming the node.
memplan_cli_test("analyze of a Reshape fixed to batch 4 refuses the searched micro-batch"
  EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: with micro-batch 1 \\(tried by the micro-batch search. --micro-batch pins one\\): node 'fixed_reshape' \\(Reshape\\)[^\n]*\n$"
  COMMAND analyze ${H4}/reshape_fixed_batch.onnx --gpu 24G)
memplan_cli_test("analyze --batch 8 of a Reshape fixed to batch 4 is one line, exit 2"
  EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: with micro-batch 8: node 'fixed_reshape' \\(Reshape\\)[^\n]*\n$"
  COMMAND analyze ${H4}/reshape_fixed_batch.onnx --gpu 24G --batch 8)
memplan_cli_test("analyze --batch 4 of a Reshape fixed to batch 4 plans" EXPECT_EXIT 0
  COMMAND analyze ${H4}/reshape_fixed_batch.onnx --gpu 24G --batch 4)

# Plan readers: a loss scale no float32 GradScaler holds, -0, and a binding of 2^63.
foreach(plan loss_scale_1e308 loss_scale_negative_zero)
  if(plan STREQUAL "loss_scale_1e308")
    set(shown "1e\\+308")
  else()
    set(shown "-0")
  endif()
  memplan_cli_test("verify --plan ${plan} names plan.loss_scale, exit 2" EXPECT_EXIT 2
    EXPECT_OUTPUT "^memplan: plan '[^']+${plan}.json': 'plan.loss_scale' is ${shown}. a loss scale is a positive float32 \\(at most 3.4e38\\)\n$"
    COMMAND verify ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --plan ${HP4}/${plan}.json)
  memplan_cli_test("export of ${plan} names plan.loss_scale, exit 2" EXPECT_EXIT 2
    EXPECT_OUTPUT "^memplan: [^\n]*${plan}.json: cannot export this plan: 'plan.loss_scale' is ${shown}. a loss scale[^\n]*\n$"
    COMMAND export ${HP4}/${plan}.json --to pytorch)
endforeach()
memplan_cli_test("verify --plan with a binding of 2^63 names it, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: plan '[^']+bindings_2_63.json': 'bindings.batch' is not a positive integer\n$"
  COMMAND verify ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --plan ${HP4}/bindings_2_63.json)
memplan_cli_test("export of a plan with a binding of 2^63 names it, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*bindings_2_63.json: cannot export this plan: 'bindings.batch' is not a positive integer[^\n]*\n$"
  COMMAND export ${HP4}/bindings_2_63.json --to pytorch)
