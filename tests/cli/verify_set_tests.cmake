# Issue 45 item 5: `memplan verify` on a generated set of small valid models
# (tests/fixtures/make_verify_set.py writes tests/fixtures/verify_set/): an op per model after a
# trained layer, attributes given as initializers (Clip's bounds, Dropout's ratio, Pad's pads,
# Slice's bounds, Resize's scales), unused outputs (Split, Dropout's mask, TopK's indices). Each
# passes, or fails with the limitation stated below: never an internal invariant, never a refusal
# of valid input. tests/runtime/verify_set_coverage_test.cc checks that every registry op is in a
# model of the set (or of the few other models a verify test runs), or is a stated limitation.
set(VS ${MEMPLAN_TEST_FIXTURES}/verify_set)

# Ops outside the registry (CumSum joined it in issue 44): verify names the op it cannot run
# (no CPU kernel) and stops.
set(MEMPLAN_VERIFY_SET_LIMITS
  "binary_mean2|no CPU kernel for op type 'Mean'"
  "binary_sum3|no CPU kernel for op type 'Sum'"
  "depth_to_space|no CPU kernel for op type 'DepthToSpace'"
  "topk_unused_indices|no CPU kernel for op type 'TopK'"
  "unary_softsign|no CPU kernel for op type 'Softsign'")

file(GLOB MEMPLAN_VERIFY_SET_MODELS CONFIGURE_DEPENDS ${VS}/*.onnx)
foreach(path ${MEMPLAN_VERIFY_SET_MODELS})
  get_filename_component(model ${path} NAME_WE)
  set(limit "")
  foreach(entry ${MEMPLAN_VERIFY_SET_LIMITS})
    string(REPLACE "|" ";" parts "${entry}")
    list(GET parts 0 limited)
    if(limited STREQUAL model)
      list(GET parts 1 limit)
    endif()
  endforeach()
  if(limit STREQUAL "")
    memplan_cli_test("verify set: ${model} passes" EXPECT_EXIT 0
      EXPECT_OUTPUT "result: PASS" COMMAND verify ${path} --batch 2)
  else()
    memplan_cli_test("verify set: ${model} states its limitation" EXPECT_EXIT 2
      EXPECT_OUTPUT "^memplan: [^\n]*${limit}\n$" COMMAND verify ${path} --batch 2)
  endif()
endforeach()

# The losses the program appends (memplan:SumLoss, memplan:MseLoss: no model file names them),
# run with accumulation: 2 micro-batches of 1 against one batch of 2. Accumulation divides each
# micro-batch's loss by k, as the exported loops do, so a sum's 2 micro-batches are half the whole
# batch's sum (analyzer/vocabulary/loss_kind.h): the check compares them with the whole batch's
# gradients over k (it compared them unscaled: max rel error 0.5, FAIL, for --loss sum).
foreach(loss sum mse)
  memplan_cli_test("verify set: the appended losses run: --loss ${loss}" EXPECT_EXIT 0
    EXPECT_OUTPUT "gradients +max rel error [^\n]*PASS.*result: PASS"
    COMMAND verify ${VS}/unary_tanh.onnx --micro-batch 1 --global-batch 2 --loss ${loss})
endforeach()
