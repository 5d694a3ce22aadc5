# `memplan inspect` on every bad-input fixture (tests/fixtures/make_fixtures.py) exits 2 with one
# line on stderr naming the problem. The importer's exact messages are asserted in
# tests/graph/import_bad_input_test.cc; here the CLI contract (exit 2, one line) is checked.
# (A missing file and a directory are covered by inspect_tests.cmake.)
set(FX ${MEMPLAN_TEST_FIXTURES})

function(memplan_import_error_test fixture what)
  memplan_cli_test("inspect ${fixture}: one line naming the problem, exit 2" EXPECT_EXIT 2
    EXPECT_OUTPUT "^memplan: [^\n]*${what}[^\n]*\n$" COMMAND inspect ${FX}/${fixture})
endfunction()

memplan_import_error_test(empty.onnx "is empty")
memplan_import_error_test(random.onnx "is not a valid ONNX model")
memplan_import_error_test(truncated.onnx "is not a valid ONNX model")
memplan_import_error_test(loop.onnx "node 'the_loop' \\(Loop\\): subgraph ops \\(If, Loop, Scan\\) are not supported")
memplan_import_error_test(cycle.onnx "cycle: node 'node_a' \\(Add\\) -> node 'node_b' \\(Relu\\) -> node 'node_a'")
memplan_import_error_test(unproduced_input.onnx "node 'adds_ghost' \\(Add\\): input 'ghost' is not produced")
memplan_import_error_test(negative_dim.onnx "input 'x' has a negative dim -3")
memplan_import_error_test(overflow_dim.onnx "value 'x' has shape [^\n]* overflows 64 bits")
memplan_import_error_test(external_escape.onnx "initializer 'W': external data location '../x.bin' escapes the model's folder")
memplan_import_error_test(external_absolute.onnx "initializer 'W': external data location '/etc/passwd' is an absolute path")

# Absent external data is fine (only metadata is read); an unknown op is a warning, not an error.
memplan_cli_test("inspect external_absent.onnx: absent weight file imports, exit 0" EXPECT_EXIT 0
  COMMAND inspect ${FX}/external_absent.onnx)
memplan_cli_test("inspect unknown_op.onnx: unknown op warns, exit 0" EXPECT_EXIT 0
  EXPECT_OUTPUT "unknown op 'com.example::MysteryOp'" COMMAND inspect ${FX}/unknown_op.onnx)
