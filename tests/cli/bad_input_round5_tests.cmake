# Bad input, round 5 (issue 45): the micro-batches the search tries re-checked, float shape
# arithmetic by zero, `check` and the plan readers' ranges. Each error is one `memplan: ` line on
# stderr, nothing on stdout, exit 2. The regular expressions write '.' for ';', which CMake's lists
# would split on.
set(H5 ${MEMPLAN_TEST_FIXTURES}/hostile)
set(HP5 ${MEMPLAN_TEST_FIXTURES}/plans/hostile)

# A float shape computation divided by 0.0: Reshape(x, [-1, int(float(x.shape[1]) / 0.0)]). The
# infinite size was dropped into an unknown dim ("pass --dim ...") instead of an error.
foreach(case "float_shape_div_zero|Div|division" "float_shape_div_negative_zero|Div|division"
             "float_shape_mod_zero|Mod|modulo")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 model)
  list(GET parts 1 op)
  list(GET parts 2 what)
  memplan_cli_test("inspect of ${model} names the ${op}, exit 2" EXPECT_EXIT 2
    EXPECT_OUTPUT "^memplan: node 'by_zero' \\(${op}\\): a floating-point ${what} by zero in a shape computation \\(input 1 'divisor' is 0\\): the size it computes would be [^\n]*\n$"
    COMMAND inspect ${H5}/${model}.onnx)
endforeach()
memplan_cli_test("analyze of a float shape divided by 0.0 is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: node 'by_zero' \\(Div\\): a floating-point division by zero[^\n]*\n$"
  COMMAND analyze ${H5}/float_shape_div_zero.onnx --gpu 24G --batch 2)
# The same size computed from constants alone: Expand(x, [1, int(16.0 / 0.0)]).
memplan_cli_test("inspect of a constant float size divided by 0.0 names the Div, exit 2"
  EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: node 'sixteen_by_zero' \\(Div\\): a floating-point division by zero in a shape computation \\(input 1 'zero' is 0\\)[^\n]*\n$"
  COMMAND inspect ${H5}/float_constant_division_by_zero.onnx)
# The valid counterpart, divided by 2.0, is not refused (its size stays a generated symbol: float
# shape arithmetic is not folded).
memplan_cli_test("inspect of a float shape divided by 2.0 imports, exit 0" EXPECT_EXIT 0
  EXPECT_NO_OUTPUT "memplan:" COMMAND inspect ${H5}/float_shape_div_two.onnx)

# Every micro-batch the search tries is re-checked like --dim. h[batch, 16] + rows[3, 16]
# broadcasts for a batch of 1 or 3 only: with --global-batch 3 the search chose m = 3 and its
# candidates table planned m = 2, 4, 8... silently (exit 0). Now the first tried micro-batch that
# breaks it (2: the search doubles from 1) is refused naming the node.
memplan_cli_test("analyze --global-batch 3 refuses the micro-batch 2 its search tries" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: with micro-batch 2 \\(tried by the micro-batch search. --micro-batch pins one\\): node 'add_rows' \\(Add\\)[^\n]*\n$"
  COMMAND analyze ${H5}/broadcast_three_rows.onnx --gpu 24G --global-batch 3)
# Pinned where it holds, it plans; the comparison rows at 2 and 4 (powers of two up to 2m) are
# left out of the table, m = 1 (broadcast to 3 rows) stays.
memplan_cli_test("analyze --micro-batch 3 of the 3-row broadcast plans without rows at 2 or 4"
  EXPECT_EXIT 0 EXPECT_NO_OUTPUT "\"micro_batch\": [24],"
  COMMAND analyze ${H5}/broadcast_three_rows.onnx --gpu 24G --micro-batch 3 --json)
memplan_cli_test("analyze --micro-batch 2 of the 3-row broadcast is one line, exit 2"
  EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: with micro-batch 2: node 'add_rows' \\(Add\\)[^\n]*\n$"
  COMMAND analyze ${H5}/broadcast_three_rows.onnx --gpu 24G --micro-batch 2)
# Under --tp the graph planned is one rank's slice (fc1 column-, fc2 row-parallel); its
# micro-batches are checked against the model before the split (was: none checked under --tp,
# exit 0).
memplan_cli_test("analyze --tp 2 refuses the micro-batch 2 its search tries" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: with micro-batch 2 \\(tried by the micro-batch search. --micro-batch pins one\\): node 'add_rows' \\(Add\\)[^\n]*\n$"
  COMMAND analyze ${H5}/broadcast_three_rows.onnx --gpu 24G --gpus 2 --tp 2)
memplan_cli_test("analyze --tp 2 --micro-batch 2 of the 3-row broadcast is one line, exit 2"
  EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: with micro-batch 2: node 'add_rows' \\(Add\\)[^\n]*\n$"
  COMMAND analyze ${H5}/broadcast_three_rows.onnx --gpu 24G --gpus 2 --tp 2 --micro-batch 2)
memplan_cli_test("analyze --tp 2 --micro-batch 3 of the 3-row broadcast plans" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"micro_batch\": 3,"
  COMMAND analyze ${H5}/broadcast_three_rows.onnx --gpu 24G --gpus 2 --tp 2 --micro-batch 3 --json)
# The alternatives of a --tp plan are planned on the split graph too: each checks its
# micro-batches against the model before the split, under its own flags (was: none checked, and
# "--gpu T4" was offered at m=65536, where rows[3, 16] cannot broadcast against h[65536, 16]).
memplan_cli_test("analyze --tp 2 alternatives re-check the micro-batches they try" EXPECT_EXIT 1
  EXPECT_OUTPUT "not planned: --gpu T4[^\n]*: with micro-batch 2 \\(tried by the micro-batch search"
  EXPECT_NO_OUTPUT "m=65536"
  COMMAND analyze ${H5}/broadcast_three_rows.onnx --gpu 513M --gpus 2 --tp 2)

# Plan readers: loss_scale 0 and the strings "NaN" and "Infinity" (what a hand-edited plan or
# another JSON writer holds), each refused by verify --plan and export naming the field.
foreach(case "loss_scale_zero|is 0. a loss scale is a positive float32 \\(at most 3.4e38\\)"
             "loss_scale_nan_string|is not a number"
             "loss_scale_infinity_string|is not a number")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 plan)
  list(GET parts 1 why)
  memplan_cli_test("verify --plan ${plan} names plan.loss_scale, exit 2" EXPECT_EXIT 2
    EXPECT_OUTPUT "^memplan: plan '[^']+${plan}.json': 'plan.loss_scale' ${why}\n$"
    COMMAND verify ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --plan ${HP5}/${plan}.json)
  memplan_cli_test("export of ${plan} names plan.loss_scale, exit 2" EXPECT_EXIT 2
    EXPECT_OUTPUT "^memplan: [^\n]*${plan}.json: cannot export this plan: 'plan.loss_scale' ${why}[^\n]*\n$"
    COMMAND export ${HP5}/${plan}.json --to pytorch)
endforeach()

# `check` reads a baseline's recorded plans: a micro-batch of 2^63, a static loss scale beyond
# float32 (was replayed, exit 0) and a name that is not UTF-8, each one line.
memplan_cli_test("check of a recorded micro-batch of 2^63 is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*baseline_micro_batch_2_63.json: configuration 'tiny_mlp': 'plan': flag 'micro_batch' must be an integer >= 1\n$"
  COMMAND check --baseline ${HP5}/baseline_micro_batch_2_63.json)
memplan_cli_test("check of a recorded loss scaling static:1e308 is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: configuration 'tiny_mlp': --loss-scaling: loss scaling 'static:1e308': a loss scale is a positive float32 \\(at most 3.4e38\\)\n$"
  COMMAND check --baseline ${HP5}/baseline_loss_scaling_1e308.json)
memplan_cli_test("check of a baseline whose name is not UTF-8 is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*baseline_name_not_utf8.json is not valid JSON: [^\n]*ill-formed UTF-8 byte[^\n]*\n$"
  COMMAND check --baseline ${HP5}/baseline_name_not_utf8.json)
memplan_cli_test("analyze --loss-scaling static:1e308 is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*loss scaling 'static:1e308': a loss scale is a positive float32 \\(at most 3.4e38\\)\n$"
  COMMAND analyze ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --gpu 24G --batch 4 --precision fp16
          --loss-scaling static:1e308)

# verify --plan ran with the scaler's default start (65536) whatever plan.loss_scale said. The
# plan is tiny_mlp's `analyze --batch 4 --precision fp16 --json` with loss_scale 2^20: from there
# its fp16 gradients overflow and the dynamic scaler halves it, 1048576 -> 524288 (GradScaler's
# backoff factor 0.5); from 65536 nothing overflows and no scaler line is printed.
memplan_cli_test("verify --plan starts the dynamic scaler at the plan's loss_scale" EXPECT_EXIT 0
  EXPECT_OUTPUT "scaler      step 0: overflow_skip, scale 1.04858e\\+06 -> 524288\n"
  COMMAND verify ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx
          --plan ${MEMPLAN_TEST_FIXTURES}/plans/tiny_mlp_fp16_loss_scale_2_20_plan.json)
memplan_cli_test("verify of tiny_mlp in fp16 at the default loss scale has no overflow to skip" EXPECT_EXIT 0
  EXPECT_NO_OUTPUT "overflow_skip"
  COMMAND verify ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --batch 4 --precision fp16)
