# `memplan baseline` records the plan it measured and `memplan check` replays it (issue 16):
# a grown model is measured on the recorded micro-batch, so it cannot hide behind a smaller one.
# Also: what `baseline` says it pinned, JUnit/GitHub output on errors, annotation lines.

set(REPLAY_WORK ${CMAKE_CURRENT_BINARY_DIR}/plan_replay)
add_test(NAME "cli: plan replay scenario is set up"
         COMMAND sh ${MEMPLAN_TEST_FIXTURES}/ci_check/setup_replay_scenario.sh
                 $<TARGET_FILE:memplan> ${CMAKE_BINARY_DIR}/zoo ${REPLAY_WORK})
set_tests_properties("cli: plan replay scenario is set up" PROPERTIES FIXTURES_SETUP plan_replay)

function(plan_replay_test name)
  memplan_cli_test("${name}" ${ARGN})
  set_tests_properties("cli: ${name}" PROPERTIES FIXTURES_REQUIRED plan_replay)
endfunction()

# ResNet-50 has more parameters (25.6 M vs 11.7 M) and saves more activations per sample than
# ResNet-18 at the same micro-batch, so the replayed plan's peak must grow; the planner would fit
# fewer ResNet-50 samples, so the largest micro-batch that fits must shrink.
plan_replay_test("check replays the recorded plan: ResNet-18 -> ResNet-50 regresses" EXPECT_EXIT 1
  EXPECT_OUTPUT "REGRESSION +resnet .*replayed the recorded plan --micro-batch [0-9]+ --precision fp32 --recompute none; largest micro-batch that fits [0-9]+ -> [0-9]+ \\(-[0-9]+\\).*FAILED"
  COMMAND check --baseline ${REPLAY_WORK}/memplan.baseline.json)
# `baseline` says what it pinned: with --batch 8 the micro-batch is the user's; precision and
# recompute are what the planner resolved ("auto" is never pinned).
memplan_cli_test("baseline says which plan it pinned" EXPECT_EXIT 0
  EXPECT_OUTPUT "^recorded mlp: peak [^\n]*; pinned plan --micro-batch 8 --precision fp32 --recompute none; largest micro-batch that fits [0-9]+\n"
  COMMAND baseline ${MEMPLAN_TEST_FIXTURES}/ci_check/mlp.onnx --gpu 24G --batch 8 --precision fp32
          --out ${CMAKE_CURRENT_BINARY_DIR}/pinned.baseline.json)

# --- errors reach the machine formats (exit 2) --------------------------------------------------
memplan_cli_test("check --format junit writes a JUnit file on an error" EXPECT_EXIT 2
  EXPECT_OUTPUT "^<\\?xml[^\n]*\n<testsuites name=\"memplan check\" tests=\"1\" failures=\"0\" errors=\"1\".*<error type=\"error\" message=\"cannot read [^\"]*no-such-baseline\\.json\">.*</testsuites>\nmemplan: cannot read [^\n]*\n$"
  COMMAND check --baseline ${CMAKE_CURRENT_BINARY_DIR}/no-such-baseline.json --format junit)
memplan_cli_test("check --format github annotates an error" EXPECT_EXIT 2
  EXPECT_OUTPUT "^::error file=[^\n]*no-such-baseline\\.json,title=memplan check could not run::cannot read "
  COMMAND check --baseline ${CMAKE_CURRENT_BINARY_DIR}/no-such-baseline.json --format github)
# A regression is annotated on the model that changed (added/model.onnx, the baseline's model
# path joined to its folder), not on the baseline file.
ci_check_test("check --format github annotates the model that changed" EXPECT_EXIT 1
  EXPECT_OUTPUT "^::error file=[^\n,]*added/model\\.onnx,title=memplan memory regression in mlp-added::"
  COMMAND check --baseline ${CI_WORK}/added/memplan.baseline.json --format github)
