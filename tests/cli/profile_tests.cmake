# `memplan profile`: without a CUDA build or a device it refuses with one line and exit 2.
# A GPU runner configures with -DMEMPLAN_TEST_GPU=ON, where this refusal does not apply.
option(MEMPLAN_TEST_GPU "The test machine has a CUDA device (GPU CI runners)" OFF)

if(NOT MEMPLAN_TEST_GPU)
  memplan_cli_test("profile without a GPU is one line, exit 2" EXPECT_EXIT 2
    EXPECT_OUTPUT "^memplan profile: no CUDA device available \\(profiling needs a GPU\\)\n$"
    COMMAND profile ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --out profile.json)
endif()
memplan_cli_test("profile requires --out" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: profile: [^\n]*--out[^\n]*\n$"
  COMMAND profile model.onnx)
