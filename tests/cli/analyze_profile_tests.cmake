# `memplan analyze --profile`: measured per-node times replace the roofline.
# The hand-written profile gives tiny_mlp's five nodes 0.1 s forward and 0.2 s backward each.
# With --micro-batch 4 --global-batch 8 there are k = 2 micro-batches per optimizer step, so the
# step takes 2 x 5 x (0.1 + 0.2) = 3.0 s plus the optimizer's roofline microseconds, while the
# roofline alone prices the tiny model's step in well under 10 ms.
set(P ${MEMPLAN_TEST_FIXTURES}/profiles)
memplan_cli_test("analyze --profile uses the measured node times" EXPECT_EXIT 0
  EXPECT_OUTPUT "measured times for 5 nodes of this graph \\(6 in the profile\\)[^\n]*\n  estimated step 3\\.00[0-9]+ s; roofline alone 0\\.00[0-9]+ s"
  COMMAND analyze ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --gpu 24G --micro-batch 4
          --global-batch 8 --precision fp32 --profile ${P}/tiny_mlp_profile.json)
memplan_cli_test("analyze --profile adds the comparison to --json" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"profile\": {\n    \"path\": [^\n]+\n    \"measured_nodes\": 5,\n    \"profile_nodes\": 6,\n    \"step_seconds\": 3\\.00"
  COMMAND analyze ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --gpu 24G --micro-batch 4
          --global-batch 8 --precision fp32 --profile ${P}/tiny_mlp_profile.json --json)
memplan_cli_test("analyze --profile of a missing file is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --profile: [^\n]*no_such_profile.json[^\n]*\n$"
  COMMAND analyze ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --gpu 24G
          --profile ${P}/no_such_profile.json)
memplan_cli_test("analyze --profile of a non-profile JSON is one line, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --profile: [^\n]*schema[^\n]*\n$"
  COMMAND analyze ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --gpu 24G
          --profile ${MEMPLAN_TEST_FIXTURES}/plans/tiny_mlp_verify_plan.json)
# 1e308 s per node is finite on its own but overflows to infinity once summed over the step,
# which the JSON would print as null with exit 0: the reader refuses it and names the field.
memplan_cli_test("analyze --profile with 1e308 s per node is refused, exit 2" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --profile: [^\n]*\"forward_seconds\" is 1e\\+?308 s, more than a day[^\n]*\n$"
  COMMAND analyze ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --gpu 24G
          --profile ${P}/hostile/huge_seconds.json)
