# `memplan profile`: without a CUDA build or a device it refuses with one line and exit 2.
# A GPU runner configures with -DMEMPLAN_TEST_GPU=ON, where this refusal does not apply.
option(MEMPLAN_TEST_GPU "The test machine has a CUDA device (GPU CI runners)" OFF)

if(NOT MEMPLAN_TEST_GPU)
  memplan_cli_test("profile without a GPU is one line, exit 2" EXPECT_EXIT 2
    EXPECT_OUTPUT "^memplan: no CUDA device available \\(profiling needs a GPU\\)\n$"
    COMMAND profile ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --out profile.json)
endif()
memplan_cli_test("profile requires --out" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: profile: [^\n]*--out[^\n]*\n$"
  COMMAND profile model.onnx)
# The output paths are checked before the (long) profiling run, GPU or not.
memplan_cli_test("profile --out into a missing folder is refused first, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --out '/nonexistent_memplan_dir/p.json': the folder '/nonexistent_memplan_dir' does not exist\n$"
  COMMAND profile ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --out /nonexistent_memplan_dir/p.json)
memplan_cli_test("profile --trace that is a folder is refused first, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --trace '/tmp' is a folder, not a file\n$"
  COMMAND profile ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --out p.json --trace /tmp)
