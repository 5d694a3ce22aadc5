# --recompute-unit (docs/recompute.md): module plans checkpoint whole blocks, exactly what the
# exports wrap in torch.utils.checkpoint. TinyGPT (fixture, torch.onnx.export names such as
# /blocks/blocks.0/attn/MatMul: blocks.0 ... blocks.N are its checkpointable modules) at m=32,
# seq 32, fp32, exact allocator, eager attention; --gpu 525M is a 13 MiB budget, which needs
# recompute (tests/cli/recompute_tests.cmake).
set(U ${MEMPLAN_TEST_FIXTURES}/gpt_opset17.onnx --micro-batch 32 --dim seq=32 --precision fp32
    --allocator exact --attention eager --gpu 525M)

memplan_cli_test("recompute-unit module names the checkpointed modules" EXPECT_EXIT 0
  EXPECT_OUTPUT "recompute [0-9]+ of [0-9]+ modules \\([0-9]+ nodes\\)\nCheckpoint [0-9]+ modules: blocks\\.0[,\n]"
  EXPECT_NO_OUTPUT "Keep     [0-9]+ checkpoints"
  COMMAND analyze ${U} --recompute optimal --recompute-unit module)
memplan_cli_test("recompute-unit defaults to module where node names carry module scopes" EXPECT_EXIT 0
  EXPECT_OUTPUT "recompute [0-9]+ of [0-9]+ modules \\([0-9]+ nodes\\)\nCheckpoint [0-9]+ modules: blocks\\.0"
  COMMAND analyze ${U} --recompute optimal)
memplan_cli_test("recompute-unit node keeps node-level checkpoints" EXPECT_EXIT 0
  EXPECT_OUTPUT "recompute [0-9]+ nodes\nKeep     [0-9]+ checkpoints: /"
  EXPECT_NO_OUTPUT "Checkpoint [0-9]+ modules"
  COMMAND analyze ${U} --recompute optimal --recompute-unit node)
# TinyGPT has two transformer blocks: blocks.0 and blocks.1.
memplan_cli_test("recompute-unit module all checkpoints every block" EXPECT_EXIT 0
  EXPECT_OUTPUT "recompute 2 of 2 modules \\([0-9]+ nodes\\)\nCheckpoint 2 modules: blocks\\.0, blocks\\.1\n"
  COMMAND analyze ${U} --recompute all --recompute-unit module)
memplan_cli_test("recompute-unit is in the JSON plan" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"recompute_unit\": \"module\",\n *\"recompute_modules\": .\n *\"blocks\\.0\"[,\n].*\"checkpointable_modules\": 2,"
  COMMAND analyze ${U} --recompute optimal --json)
memplan_cli_test("recompute-unit rejects an unknown unit" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --recompute-unit: expected auto, node or module, got 'layer'\n$"
  COMMAND analyze ${U} --recompute-unit layer)
memplan_cli_test("recompute-unit module refuses sqrt" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --recompute-unit module: --recompute sqrt places node-level segments[^\n]*\n$"
  COMMAND analyze ${U} --recompute sqrt --recompute-unit module)
memplan_cli_test("recompute-unit module needs module scopes" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*module scopes[^\n]*\n$"
  COMMAND analyze ${MEMPLAN_TEST_FIXTURES}/tiny_mlp.onnx --gpu 24G --recompute all
          --recompute-unit module)
memplan_cli_test("recompute-unit help shows its default" EXPECT_EXIT 0
  EXPECT_OUTPUT "--recompute-unit TEXT=auto"
  COMMAND analyze --help)

# --recompute-reentrant (torch.utils.checkpoint(use_reentrant=True), issue 40 item 10): named in
# the text report and the JSON, exported as HF's gradient_checkpointing_kwargs; a node plan has
# no module to re-run whole. The bytes are pinned by tests/analyzer/recompute/
# checkpoint_held_test.cc and the torch rows (recipe_rows_tests.cmake).
memplan_cli_test("recompute-reentrant is named in the text report" EXPECT_EXIT 0
  EXPECT_OUTPUT "\nReentrant torch.utils.checkpoint\\(use_reentrant=True\\): each module re-run whole in backward"
  COMMAND analyze ${U} --recompute all --recompute-unit module --recompute-reentrant)
memplan_cli_test("recompute-reentrant is in the JSON plan" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"recompute_reentrant\": true"
  COMMAND analyze ${U} --recompute all --recompute-unit module --recompute-reentrant --json)
memplan_cli_test("non-reentrant checkpointing says so in the JSON plan" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"recompute_reentrant\": false"
  COMMAND analyze ${U} --recompute all --recompute-unit module --json)
memplan_cli_test("recompute-reentrant is exported as HF's gradient_checkpointing_kwargs"
  EXPECT_EXIT 0
  EXPECT_OUTPUT "gradient_checkpointing=True,\n    gradient_checkpointing_kwargs=\\{\"use_reentrant\": True\\},"
  COMMAND analyze ${U} --recompute all --recompute-unit module --recompute-reentrant
          --export hf-trainer)
memplan_cli_test("recompute-reentrant refuses node-level recompute" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --recompute-reentrant: reentrant torch.utils.checkpoint re-runs whole modules; use --recompute-unit module \\(or auto\\)\n$"
  COMMAND analyze ${U} --recompute all --recompute-unit node --recompute-reentrant)
