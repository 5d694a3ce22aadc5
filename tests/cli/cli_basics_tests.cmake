# CLI basics: help, verbs, the exit-code contract and the one-line error for bad usage.
# An error must be exactly one line "memplan: ..." on stderr (stdout empty): the regexes below
# anchor at both ends and forbid a newline before the final one ("^memplan: [^\n]+\n$").

memplan_cli_test("help exits 0 and lists the verbs" EXPECT_EXIT 0
  EXPECT_OUTPUT "analyze.*inspect.*verify.*profile.*check.*baseline.*export.*report"
  COMMAND --help)
memplan_cli_test("verb help exits 0" EXPECT_EXIT 0 EXPECT_OUTPUT "--dim.*--json"
  COMMAND inspect --help)
memplan_cli_test("no verb is a usage error" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: a verb is required[^\n]+\n$" COMMAND)
memplan_cli_test("unknown verb is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: unknown verb 'frobnicate'[^\n]+\n$" COMMAND frobnicate model.onnx)
memplan_cli_test("unknown flag is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: inspect: [^\n]*--bogus[^\n]*\n$"
  COMMAND inspect model.onnx --bogus)
memplan_cli_test("unknown global flag is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: unknown option '--bogus'[^\n]+\n$" COMMAND --bogus)
memplan_cli_test("missing flag value is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: inspect: [^\n]*--batch[^\n]*\n$" COMMAND inspect model.onnx --batch)
memplan_cli_test("missing model is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: inspect: [^\n]*model[^\n]*\n$" COMMAND inspect)

# Malformed common flags: rejected before the model is read (the path need not exist).
memplan_cli_test("--batch must be a positive integer" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --batch: expected a positive integer, got 'abc'\n$"
  COMMAND inspect absent.onnx --batch abc)
memplan_cli_test("--batch 0 is rejected" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --batch: expected a positive integer, got '0'\n$"
  COMMAND inspect absent.onnx --batch 0)
memplan_cli_test("--dim needs name=value" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --dim: expected name=value[^\n]+\n$"
  COMMAND inspect absent.onnx --dim seq)
memplan_cli_test("--dim value must be positive" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --dim seq: expected a positive integer, got '-5'\n$"
  COMMAND inspect absent.onnx --dim seq=-5)
memplan_cli_test("--format must be known" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --format: expected text, json or markdown, got 'xml'\n$"
  COMMAND inspect absent.onnx --format xml)
memplan_cli_test("--json conflicts with --format text" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --json conflicts with --format text\n$"
  COMMAND inspect absent.onnx --json --format text)

# analyze: the bundled example fits a 24G GPU (exit 0); an impossible budget is exit 1 with what
# would fit (the planned alternatives are skipped here: alternatives_tests.cmake tests them); a
# malformed size is exit 2.
memplan_cli_test("analyze resnet18 fits 24G" EXPECT_EXIT 0 EXPECT_OUTPUT "fits"
  COMMAND analyze ${CMAKE_BINARY_DIR}/zoo/resnet18.onnx --gpu 24G)
memplan_cli_test("analyze gpt2_xl on 1G does not fit" EXPECT_EXIT 1
  EXPECT_OUTPUT "Does not fit even at micro-batch 1"
  COMMAND analyze ${CMAKE_BINARY_DIR}/zoo/gpt2_xl.onnx --gpu 1G --dim seq=1024 --no-alternatives)
memplan_cli_test("analyze bad --gpu is one line" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*\n$"
  COMMAND analyze ${CMAKE_BINARY_DIR}/zoo/resnet18.onnx --gpu 24Q)
memplan_cli_test("analyze unbound seq names the flag" EXPECT_EXIT 2
  EXPECT_OUTPUT "--dim seq="
  COMMAND analyze ${CMAKE_BINARY_DIR}/zoo/gpt2_small.onnx --gpu 24G)
