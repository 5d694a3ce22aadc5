# `--recompute optimal` at a fixed micro-batch: no recompute where the plan already fits, the
# cheapest recompute that fits otherwise, named checkpoints, and exit 1 when nothing fits.
# TinyGPT (fixture) at m=32, seq 32, fp32, exact allocator; "generic" GPUs keep 512 MiB for the
# CUDA context, so --gpu 530M is an 18 MiB budget, 525M 13 MiB, 515M 3 MiB. Without recompute
# the peak is above 13 MiB: the 525M plan must recompute to fit. Eager attention: these budgets
# were set before --attention defaulted to sdpa (which keeps less, so 525M fits without recompute).
# --recompute-unit node: these test the node-level DP (module plans: recompute_unit_tests.cmake).
set(G ${MEMPLAN_TEST_FIXTURES}/gpt_opset17.onnx --micro-batch 32 --dim seq=32 --precision fp32
    --allocator exact --recompute optimal --attention eager --recompute-unit node)
memplan_cli_test("recompute optimal keeps a plan that fits without recompute" EXPECT_EXIT 0
  EXPECT_OUTPUT "micro-batch 32, no accumulation \\(fixed by --micro-batch\\)\n[^\n]+recompute none\nPeak     [0-9.]+ MiB of 18.0 MiB \\([0-9]+%\\) - fits"
  COMMAND analyze ${G} --gpu 530M)
memplan_cli_test("recompute optimal recomputes just enough and names its checkpoints" EXPECT_EXIT 0
  EXPECT_OUTPUT "recompute [0-9]+ nodes\nKeep     [0-9]+ checkpoints: /[^\n]+\nPeak     [0-9.]+ MiB of 13.0 MiB \\([0-9]+%\\) - fits"
  COMMAND analyze ${G} --gpu 525M)
memplan_cli_test("recompute optimal that cannot fit exits 1 naming the fixed micro-batch" EXPECT_EXIT 1
  EXPECT_OUTPUT "the fixed micro-batch m=32 does not fit the budget with any plan tried"
  COMMAND analyze ${G} --gpu 515M)
