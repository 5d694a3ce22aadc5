# A count the data decides (graph/data_dependent_counts.h; issue 44, seventh pass):
# tests/fixtures/nonzero_mask.textproto picks h's positive values of x[batch, 8] @ W[8, 8] with
# NonZero and GatherND. The count of positives is planned at its upper bound, every one of the
# batch * 8 elements, so the picked output is [8*batch]; the node is named in a warning and no
# --dim beyond the batch is asked for (before: `dimension 'nonzero_0' is not bound`).
set(F ${MEMPLAN_TEST_FIXTURES})
memplan_cli_test("inspect plans a data-dependent NonZero at its upper bound, with a warning"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "y +float32 +\\[8\\*batch\\].*1 NonZero node has a count that depends on the data, planned at its upper\n +bound \\(every input element non-zero\\): 'mask_positions' of \\[batch, 8\\]"
  COMMAND inspect ${F}/nonzero_mask.onnx)
memplan_cli_test("analyze a data-dependent NonZero needs no --dim and names it in the JSON"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "\"warnings\": \\[[^]]*1 NonZero node has a count that depends on the data"
  COMMAND analyze ${F}/nonzero_mask.onnx --gpu 24G --micro-batch 4 --json)
