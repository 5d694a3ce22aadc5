# Hostile inputs (issue 14): each exits 2 at once with one `memplan: ` line naming the problem.
memplan_cli_test("inspect /dev/zero is refused before reading, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: /dev/zero is not a regular file\n$" COMMAND inspect /dev/zero)
memplan_cli_test("inspect /dev/urandom is refused before reading, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: /dev/urandom is not a regular file\n$" COMMAND inspect /dev/urandom)
# Before the fix these read without bound; a short timeout turns a regression into a failure.
set_tests_properties("cli: inspect /dev/zero is refused before reading, exit 2"
  "cli: inspect /dev/urandom is refused before reading, exit 2" PROPERTIES TIMEOUT 20)
# A global batch of 2^63 - 1 used to overflow the planner's CeilDiv, then abort.
memplan_cli_test("analyze --global-batch 2^63-1 is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --global-batch: at most 2\\^62 samples, got 9223372036854775807\n$"
  COMMAND analyze ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --gpu 24G --global-batch 9223372036854775807)
# Saved plans are schema-checked: a field of the wrong type is named, never replaced by a default.
set(H ${MEMPLAN_TEST_FIXTURES}/plans/hostile)
memplan_cli_test("verify --plan with 2^62 accumulation steps is refused, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: the plan accumulates 4611686018427387904 micro-batches per step; verify runs each one and takes at most 4096[^\n]*\n$"
  COMMAND verify ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --plan ${H}/huge_accumulation.json)
set_tests_properties("cli: verify --plan with 2^62 accumulation steps is refused, exit 2"
  PROPERTIES TIMEOUT 20)
memplan_cli_test("verify --plan with a numeric precision names the field, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: plan '[^']+': 'plan.precision' is missing or not a string\n$"
  COMMAND verify ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --plan ${H}/precision_number.json)
memplan_cli_test("verify --plan with a wrong schema is refused, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: plan '[^']+': 'schema' is not \"memplan/1\"\n$"
  COMMAND verify ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --plan ${H}/wrong_schema.json)
memplan_cli_test("verify --plan with recompute as a string names the field, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: plan '[^']+': 'plan.recompute' is not an array\n$"
  COMMAND verify ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --plan ${H}/recompute_string.json)
memplan_cli_test("export of a plan whose model.path is a number names the field, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*'model.path' is not a string[^\n]*\n$"
  COMMAND export ${H}/model_path_number.json --to pytorch)
# Numbers that would train nothing, or wrap: refused with the flag named.
memplan_cli_test("verify --learning-rate nan is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --learning-rate: expected a finite number above 0, got 'nan'\n$"
  COMMAND verify ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --batch 4 --learning-rate nan)
memplan_cli_test("verify --learning-rate -1 is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --learning-rate: expected a finite number above 0, got '-1'\n$"
  COMMAND verify ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --batch 4 --learning-rate -1)
memplan_cli_test("verify --seed -1 is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --seed: expected a whole number from 0 to 2\\^64-1, got '-1'\n$"
  COMMAND verify ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --batch 4 --seed -1)
# --dim on the batch dimension used to be overwritten by the micro-batch search (m ran to 65536):
# it pins the micro-batch exactly as --batch does, and contradicting --micro-batch is refused.
memplan_cli_test("analyze --dim batch=8 pins the micro-batch" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"micro_batch\": 8,\n    \"max_micro_batch\": 8,\n    \"accumulation_steps\": 1,\n    \"global_batch\": 8,"
  COMMAND analyze ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --gpu 24G --dim batch=8 --json)
memplan_cli_test("analyze --dim batch=8 with --micro-batch 4 is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --dim batch=8 binds the batch dimension, which disagrees with --micro-batch 4; give one of them\n$"
  COMMAND analyze ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --gpu 24G --dim batch=8 --micro-batch 4)
# verify without --gpu prepares its model as analyze does (PrepareLoadedModel), so it refuses the
# same contradiction instead of running micro-batch 4 under a --dim that said 8.
memplan_cli_test("verify --batch 4 --dim batch=8 is the same one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --dim batch=8 binds the batch dimension, which disagrees with --micro-batch 4; give one of them\n$"
  COMMAND verify ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --batch 4 --dim batch=8)
