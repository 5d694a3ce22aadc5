# Bad input and faults, round 3 (issue 45): no signal, no silent wrong plan, nothing of the user's
# overwritten or half-written. Each error is one `memplan: ` line and exit 2.
set(H3 ${MEMPLAN_TEST_FIXTURES}/hostile)
set(HP ${MEMPLAN_TEST_FIXTURES}/plans/hostile)

# Crashes: a 0 stride reached libonnx's shape inference (SIGFPE, nothing on stderr). The node's
# name, which clears the screen when printed raw, is shown escaped.
memplan_cli_test("inspect of a Conv with stride 0 is one escaped line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: node '\\\\x1b.2Jstem' \\(Conv\\): strides\\[0\\] is 0. strides must be positive\n$"
  COMMAND inspect ${H3}/conv_stride0.onnx)
# A Slice step of INT64_MIN in a shape computation: libonnx allocated without bound.
memplan_cli_test("inspect of a Slice step of INT64_MIN is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: node 'slice' \\(Slice\\): step -9223372036854775808 \\(steps\\[0\\]\\) is beyond \\+-\\(2\\^31-1\\); no dimension is that long\n$"
  COMMAND inspect ${H3}/slice_step_min.onnx)
set_tests_properties("cli: inspect of a Slice step of INT64_MIN is one line, exit 2"
  PROPERTIES TIMEOUT 20)

# Messy errors: a node name that is not UTF-8 broke --json with nlohmann's type_error.316; it is
# escaped at import (and the text report shows the xterm-title name escaped, never raw). The
# regular expressions write '.' for ';' and an unbalanced '[', which CMake's lists would split on.
memplan_cli_test("inspect --json of a non-UTF-8 name escapes it, exit 0" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"name\": \"bad\\\\\\\\xffname\""
  COMMAND inspect ${H3}/hostile_names.onnx --json)
memplan_cli_test("analyze --json of a non-UTF-8 name is valid JSON, exit 0" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"schema\": \"memplan/1\""
  COMMAND analyze ${H3}/hostile_names.onnx --gpu 24G --batch 2 --json)
memplan_cli_test("inspect prints an escape-sequence input name escaped" EXPECT_EXIT 0
  EXPECT_OUTPUT "\n  \\\\x1b.0.owned\\\\x07x  "
  COMMAND inspect ${H3}/hostile_names.onnx)
# 1e999 is beyond a double: each JSON reader names the file and the field.
memplan_cli_test("verify --plan with loss_scale 1e999 names the field, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: plan '[^']+loss_scale_1e999.json': 'plan.loss_scale' is a number beyond the range of a double\n$"
  COMMAND verify ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --plan ${HP}/loss_scale_1e999.json)
memplan_cli_test("export of a plan with loss_scale 1e999 names the field, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*loss_scale_1e999.json: 'plan.loss_scale' is a number beyond the range of a double\n$"
  COMMAND export ${HP}/loss_scale_1e999.json --to pytorch)
memplan_cli_test("baseline --configs with batch 1e999 names the field, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*configs_1e999.json: 'configurations\\[0\\].flags.batch' is a number beyond the range of a double\n$"
  COMMAND baseline --configs ${HP}/configs_1e999.json --out ${CMAKE_CURRENT_BINARY_DIR}/never_written.json)
memplan_cli_test("check --baseline with peak_bytes -1e999 names the field, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*baseline_1e999.json: 'configurations\\[0\\].result.peak_bytes' is a number beyond the range of a double\n$"
  COMMAND check --baseline ${HP}/baseline_1e999.json)
memplan_cli_test("analyze --profile with a time of 1e999 names the field, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*seconds_1e999.json: 'nodes\\[1\\].forward_seconds' is a number beyond the range of a double\n$"
  COMMAND analyze ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --gpu 24G --batch 4
          --profile ${MEMPLAN_TEST_FIXTURES}/profiles/hostile/seconds_1e999.json)

# Data loss: outputs never overwrite an input, nor each other; a failed write keeps the old file;
# a failed write to stdout is exit 2. The script builds its own scratch copies.
add_test(NAME "cli: outputs never overwrite inputs and fail whole; empty values refused"
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/output_safety_test.sh $<TARGET_FILE:memplan>
                 ${MEMPLAN_TEST_FIXTURES} ${CMAKE_CURRENT_BINARY_DIR}/output_safety)

# Empty flag values counted as absent: tested in output_safety_test.sh (CMake drops an empty
# argument from a command list).
# Wrong refusal: no reserve is a valid choice (was "a size must be at least one byte").
memplan_cli_test("analyze --reserve 0 plans, exit 0" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"budget_bytes\": [0-9]+,"
  COMMAND analyze ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --gpu 24G --batch 4 --reserve 0 --json)

# Wrong refusals of valid models in verify: a Dropout whose ratio is an initializer (the stored 0.5
# became 1.0, which Dropout refuses).
memplan_cli_test("verify of a Dropout whose ratio is an initializer passes" EXPECT_EXIT 0
  EXPECT_NO_OUTPUT "outside .0, 1."
  COMMAND verify ${H3}/dropout_ratio_initializer.onnx --batch 4)
# Silent wrong plans: a contraction dim bound to a value the weight does not have.
memplan_cli_test("analyze --dim binding a contraction dim the weight refutes is one line, exit 2"
  EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: with --dim s=128: node '[^']*' \\(MatMul\\)[^\n]*\n$"
  COMMAND analyze ${H3}/matmul_symbolic_inner.onnx --gpu 24G --dim s=128)
memplan_cli_test("analyze --dim binding the contraction dim to the weight's size plans" EXPECT_EXIT 0
  COMMAND analyze ${H3}/matmul_symbolic_inner.onnx --gpu 24G --dim s=4)
# verify of a valid model whose Split has an unused output (the issue's abort on an internal
# invariant in runtime/backend.cc, and the loss reading the wrong tensor when the Split follows a
# weight): both pass (the abort did not reproduce on this tree; these keep it so).
memplan_cli_test("verify of a Split with an unused output before a weight passes" EXPECT_EXIT 0
  EXPECT_OUTPUT "result: PASS"
  COMMAND verify ${H3}/split_unused_before_weight.onnx --batch 4)
memplan_cli_test("verify of a Split with an unused output after a weight passes" EXPECT_EXIT 0
  EXPECT_OUTPUT "result: PASS"
  COMMAND verify ${H3}/split_unused_after_weight.onnx --batch 4)
