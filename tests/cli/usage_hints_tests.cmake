# What a new user hits first: `--version`, a bare number given to --gpu, and help that shows the
# defaults and which flag is required (issue 16, papercuts).

memplan_cli_test("--version prints the version and exits 0" EXPECT_EXIT 0
  EXPECT_OUTPUT "^memplan [0-9]+\\.[0-9]+\\.[0-9]+\n$"
  COMMAND --version)

# A bare number is bytes: 24 bytes is no GPU. The message names the flag and the likely meaning.
memplan_cli_test("--gpu 24 asks whether 24G was meant" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --gpu 24: a bare number is bytes[^\n]*did you mean 24G \\(24 GiB\\)\\?\n$"
  COMMAND analyze ${CMAKE_BINARY_DIR}/zoo/resnet18.onnx --gpu 24)
# 3090 GiB is no GPU size either (above 1024 GiB), but it is in a GPU's name.
memplan_cli_test("--gpu 3090 asks whether RTX3090 was meant" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --gpu 3090: a bare number is bytes[^\n]*; did you mean RTX3090\\?\n$"
  COMMAND analyze ${CMAKE_BINARY_DIR}/zoo/resnet18.onnx --gpu 3090)
# 1 MiB = 1048576 bytes is the smallest bare number accepted: taken as bytes, it is then refused
# for leaving nothing after the CUDA context.
memplan_cli_test("--gpu 1048576 is taken as bytes" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: no memory left for training: GPU generic 1.0 MiB has 1048576 bytes"
  COMMAND analyze ${CMAKE_BINARY_DIR}/zoo/resnet18.onnx --gpu 1048576)
memplan_cli_test("--gpu 1048575 is refused" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --gpu 1048575: a bare number is bytes[^\n]*\n$"
  COMMAND analyze ${CMAKE_BINARY_DIR}/zoo/resnet18.onnx --gpu 1048575)

# Help shows every default (the optimizer is adam) and marks --gpu required where it is.
memplan_cli_test("analyze --help shows the optimizer default" EXPECT_EXIT 0
  EXPECT_OUTPUT "--optimizer TEXT=adam "
  COMMAND analyze --help)
memplan_cli_test("analyze --help marks --gpu required" EXPECT_EXIT 0
  EXPECT_OUTPUT "--gpu[^\n]*\\(required\\)"
  COMMAND analyze --help)
memplan_cli_test("verify --help does not mark --gpu required" EXPECT_EXIT 0
  EXPECT_NO_OUTPUT "\\(required\\)"
  COMMAND verify --help)
