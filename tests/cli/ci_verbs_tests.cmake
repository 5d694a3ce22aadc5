# `memplan baseline`, `memplan check`, `memplan export` and `memplan analyze --svg/--export`.
# Models: tests/fixtures/ci_check/ (made by make_ci_check_models.py). A setup test records
# baselines and then edits the models the way a pull request would (setup_check_scenarios.sh);
# the check tests need it (ctest fixture "ci_check").

set(CI_FIXTURES ${MEMPLAN_TEST_FIXTURES}/ci_check)
set(CI_WORK ${CMAKE_CURRENT_BINARY_DIR}/ci_check)

add_test(NAME "cli: check scenarios are set up"
         COMMAND sh ${CI_FIXTURES}/setup_check_scenarios.sh $<TARGET_FILE:memplan>
                 ${CI_FIXTURES} ${CI_WORK})
set_tests_properties("cli: check scenarios are set up" PROPERTIES FIXTURES_SETUP ci_check)

# Like memplan_cli_test, for tests that read what the setup wrote.
function(ci_check_test name)
  memplan_cli_test("${name}" ${ARGN})
  set_tests_properties("cli: ${name}" PROPERTIES FIXTURES_REQUIRED ci_check)
endfunction()

# --- check: the verdicts ------------------------------------------------------------------------
ci_check_test("check passes an unchanged model" EXPECT_EXIT 0
  EXPECT_OUTPUT "^memplan check: 1 configuration against [^\n]*, tolerance 1%\n.*PASS +mlp-same.*OK: every configuration within tolerance\n$"
  COMMAND check --baseline ${CI_WORK}/same/memplan.baseline.json)
# The added layer: parameters grow from 16*32 + 32 + 32*4 + 4 = 676 floats (2704 B = 2.6 KiB) by
# 32*32 + 32 = 1056 floats (4224 B = 4.1 KiB) to 6928 B (6.8 KiB); it saves its ReLU output for
# backward, [batch 8, 32] fp32 = 8*32*4 = 1024 B, at a node the baseline did not have.
ci_check_test("check catches an added layer" EXPECT_EXIT 1
  EXPECT_OUTPUT "REGRESSION +mlp-added .*parameters +2\\.6 KiB -> 6\\.8 KiB \\(\\+4\\.1 KiB\\).*saved activations grew at: [^\n]*/relu_extra/Relu \\+1\\.0 KiB \\(new\\).*FAILED"
  COMMAND check --baseline ${CI_WORK}/added/memplan.baseline.json)
# Widening the hidden layer 32 -> 64 grows relu1's saved output from 8*32*4 = 1024 B to
# 8*64*4 = 2048 B.
ci_check_test("check catches a widened tensor" EXPECT_EXIT 1
  EXPECT_OUTPUT "REGRESSION +mlp-widened .*saved activations grew at: [^\n]*/relu1/Relu \\+1\\.0 KiB.*FAILED"
  COMMAND check --baseline ${CI_WORK}/widened/memplan.baseline.json)

# --- check: tolerance edges (grown.json: the current peak is recorded + 1000 B) --------------
ci_check_test("check: growth equal to the tolerance passes" EXPECT_EXIT 0
  EXPECT_OUTPUT "PASS " COMMAND check --baseline ${CI_WORK}/edges/grown.json --tolerance 1000)
ci_check_test("check: one byte over the tolerance fails" EXPECT_EXIT 1
  EXPECT_OUTPUT "REGRESSION " COMMAND check --baseline ${CI_WORK}/edges/grown.json --tolerance 999)
ci_check_test("check: tolerance 0 fails any growth" EXPECT_EXIT 1
  EXPECT_OUTPUT "REGRESSION " COMMAND check --baseline ${CI_WORK}/edges/grown.json --tolerance 0)
ci_check_test("check: a generous percentage passes" EXPECT_EXIT 0
  EXPECT_OUTPUT "PASS " COMMAND check --baseline ${CI_WORK}/edges/grown.json --tolerance 50%)
ci_check_test("check: a shrink beyond the tolerance is an improvement" EXPECT_EXIT 0
  EXPECT_OUTPUT "IMPROVEMENT "
  COMMAND check --baseline ${CI_WORK}/edges/shrunk.json --tolerance 999)
ci_check_test("check: a shrink within the tolerance passes" EXPECT_EXIT 0
  EXPECT_OUTPUT "PASS " COMMAND check --baseline ${CI_WORK}/edges/shrunk.json --tolerance 1000)

# --- check: output formats ------------------------------------------------------------------------
ci_check_test("check --format markdown" EXPECT_EXIT 1
  EXPECT_OUTPUT "^## memplan memory check\n.*\\| :x: regression \\| `mlp-added`"
  COMMAND check --baseline ${CI_WORK}/added/memplan.baseline.json --format markdown)
ci_check_test("check --format github" EXPECT_EXIT 1
  EXPECT_OUTPUT "^::error file=[^\n,]*model\\.onnx,title=[^\n]*::[^\n]*mlp-added"
  COMMAND check --baseline ${CI_WORK}/added/memplan.baseline.json --format github)
ci_check_test("check --format junit" EXPECT_EXIT 1
  EXPECT_OUTPUT "^<\\?xml[^\n]*\n<testsuites.*<testcase classname=\"memplan.check\" name=\"mlp-added\".*<failure type=\"regression\""
  COMMAND check --baseline ${CI_WORK}/added/memplan.baseline.json --format junit)
ci_check_test("check --format text on a pass" EXPECT_EXIT 0 EXPECT_OUTPUT "mlp-same"
  COMMAND check --baseline ${CI_WORK}/same/memplan.baseline.json --format text)

# --- config lists ---------------------------------------------------------------------------------
ci_check_test("check passes a config-list baseline" EXPECT_EXIT 0
  EXPECT_OUTPUT "PASS +mlp-b8-fp32.*PASS +mlp-b16-fp16-adamw"
  COMMAND check --baseline ${CI_WORK}/list/memplan.baseline.json)
# memplan.configs.more.json drops mlp-b16-fp16-adamw and adds mlp-b32-sgd.
ci_check_test("check --configs reports missing and new configurations" EXPECT_EXIT 1
  EXPECT_OUTPUT "PASS +mlp-b8-fp32.*MISSING +mlp-b16-fp16-adamw.*NEW +mlp-b32-sgd"
  COMMAND check --baseline ${CI_WORK}/list/memplan.baseline.json
          --configs ${CI_WORK}/list/memplan.configs.more.json)

# --- check: errors are exit 2 and one line ----------------------------------------------------
ci_check_test("check: a truncated baseline is one line" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*truncated\\.json is not valid JSON[^\n]*\n$"
  COMMAND check --baseline ${CI_WORK}/bad/truncated.json)
ci_check_test("check: a file that is not a baseline is one line" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*wrong_schema\\.json: not a memplan baseline[^\n]*\n$"
  COMMAND check --baseline ${CI_WORK}/bad/wrong_schema.json)
ci_check_test("check: an invalid recorded peak is one line" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*'peak_bytes' must be an integer[^\n]*\n$"
  COMMAND check --baseline ${CI_WORK}/bad/bad_peak.json)
ci_check_test("check: a baselined model that is gone is one line" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: configuration 'mlp-same': cannot open model [^\n]*absent\\.onnx[^\n]*\n$"
  COMMAND check --baseline ${CI_WORK}/bad/absent_model.json)
memplan_cli_test("check: an absent baseline is one line" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: cannot read [^\n]*\n$"
  COMMAND check --baseline ${CMAKE_CURRENT_BINARY_DIR}/no-such-baseline.json)
memplan_cli_test("check needs --baseline" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: check: --baseline is required[^\n]*\n$" COMMAND check)
memplan_cli_test("check: a bad tolerance is one line" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --tolerance: invalid tolerance '2 parsecs'[^\n]*\n$"
  COMMAND check --baseline absent.json --tolerance "2 parsecs")
memplan_cli_test("check: a bad format is one line" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --format: unknown check format 'xml'[^\n]*\n$"
  COMMAND check --baseline absent.json --format xml)

# --- baseline: usage ------------------------------------------------------------------------------
memplan_cli_test("baseline needs --out" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: baseline: --out is required[^\n]*\n$"
  COMMAND baseline ${CI_FIXTURES}/mlp.onnx --gpu 24G --batch 8)
memplan_cli_test("baseline needs a model or --configs" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: baseline: a model [^\n]*--configs[^\n]*\n$"
  COMMAND baseline --out ${CMAKE_CURRENT_BINARY_DIR}/unused.baseline.json)
memplan_cli_test("baseline needs --gpu" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --gpu is required[^\n]*\n$"
  COMMAND baseline ${CI_FIXTURES}/mlp.onnx --out ${CMAKE_CURRENT_BINARY_DIR}/unused.baseline.json)
memplan_cli_test("baseline: --configs with plan flags is one line" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: baseline: --batch conflicts with --configs[^\n]*\n$"
  COMMAND baseline --configs ${CI_FIXTURES}/memplan.configs.json --batch 8
          --out ${CMAKE_CURRENT_BINARY_DIR}/unused.baseline.json)
memplan_cli_test("baseline writes the file and names the peak" EXPECT_EXIT 0
  EXPECT_OUTPUT "^recorded mlp: peak [^\n]*\nwrote [^\n]*b8\\.baseline\\.json \\(1 configuration\\)\n$"
  COMMAND baseline ${CI_FIXTURES}/mlp.onnx --gpu 24G --batch 8
          --out ${CMAKE_CURRENT_BINARY_DIR}/b8.baseline.json)

# --- export and analyze --export / --svg ----------------------------------------------------------
# Exact values of resnet18_fp16_plan.json: micro-batch 8 x 4 accumulation steps = 32 samples.
memplan_cli_test("export deepspeed from a plan file" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"train_batch_size\": 32,.*\"train_micro_batch_size_per_gpu\": 8,.*\"gradient_accumulation_steps\": 4"
  COMMAND export ${MEMPLAN_TEST_FIXTURES}/plans/resnet18_fp16_plan.json --to deepspeed)
memplan_cli_test("export hf-trainer from a plan file" EXPECT_EXIT 0
  EXPECT_OUTPUT "per_device_train_batch_size=8,.*gradient_accumulation_steps=4,.*fp16=True"
  COMMAND export ${MEMPLAN_TEST_FIXTURES}/plans/resnet18_fp16_plan.json --to hf-trainer)
memplan_cli_test("export needs --to" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: export: --to is required \\(deepspeed\\|hf-trainer[^\n]*\n$"
  COMMAND export ${MEMPLAN_TEST_FIXTURES}/plans/resnet18_fp16_plan.json)
memplan_cli_test("export: an unknown target is one line" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --to: unknown export target 'keras'[^\n]*\n$"
  COMMAND export ${MEMPLAN_TEST_FIXTURES}/plans/resnet18_fp16_plan.json --to keras)
memplan_cli_test("export: an absent plan is one line" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: cannot read [^\n]*\n$"
  COMMAND export ${CMAKE_CURRENT_BINARY_DIR}/no-such-plan.json --to deepspeed)
memplan_cli_test("export: a file that is not a plan is one line" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: [^\n]*memplan\\.configs\\.json: not a memplan plan[^\n]*\n$"
  COMMAND export ${CI_FIXTURES}/memplan.configs.json --to deepspeed)
memplan_cli_test("analyze --export prints the config instead of the analysis" EXPECT_EXIT 0
  EXPECT_OUTPUT "^# Generated by memplan[^\n]*\n.*accumulate_grad_batches=1,"
  COMMAND analyze ${CI_FIXTURES}/mlp.onnx --gpu 24G --batch 8 --export lightning)
memplan_cli_test("analyze --export-out needs --export" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: analyze: --export-out needs --export TARGET\n$"
  COMMAND analyze ${CI_FIXTURES}/mlp.onnx --gpu 24G --export-out x.json)
memplan_cli_test("analyze --export names an unknown target" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --export: unknown export target 'keras'[^\n]*\n$"
  COMMAND analyze ${CI_FIXTURES}/mlp.onnx --gpu 24G --export keras)
memplan_cli_test("analyze --svg names a file it cannot write" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: cannot write '/nonexistent-dir/t.svg': [^\n]+\n$"
  COMMAND analyze ${CI_FIXTURES}/mlp.onnx --gpu 24G --svg /nonexistent-dir/t.svg)

# Every target exported from `analyze --json` output and from `analyze --export`, checked by the
# real parsers (py_compile, json, yaml), the --svg picture parsed as XML, and check output compared
# across runs. Skipped (exit 77) where /usr/bin/python3 is absent.
add_test(NAME "cli: exports parse, the SVG is valid, check output is deterministic"
         COMMAND sh ${CI_FIXTURES}/export_and_svg_test.sh $<TARGET_FILE:memplan>
                 ${CI_FIXTURES} ${CI_WORK}/export)
set_tests_properties("cli: exports parse, the SVG is valid, check output is deterministic"
                     PROPERTIES SKIP_RETURN_CODE 77 FIXTURES_REQUIRED ci_check)

# The GitHub workflow docs/ci_checks.md shows, its run: steps executed as written (install and
# build excepted) on the grown model: annotations, the three reports, the step summary; and the
# reports again after an error.
add_test(NAME "cli: the documented GitHub workflow's steps run"
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/ci_workflow_steps_test.py
                 $<TARGET_FILE:memplan> ${PROJECT_SOURCE_DIR}/docs/ci_checks.md
                 ${CI_WORK}/added ${CMAKE_CURRENT_BINARY_DIR}/ci_workflow)
set_tests_properties("cli: the documented GitHub workflow's steps run"
                     PROPERTIES FIXTURES_REQUIRED ci_check)
ci_check_test("check --format json" EXPECT_EXIT 1
  EXPECT_OUTPUT "\"schema\": \"memplan-check/1\",[^$]*\"exit_code\": 1,[^$]*\"status\": \"regression\""
  COMMAND check --baseline ${CI_WORK}/added/memplan.baseline.json --format json)
memplan_cli_test("check --format markdown writes the comment on an error" EXPECT_EXIT 2
  EXPECT_OUTPUT "^## memplan memory check\n\n:warning: \\*\\*Could not run\\*\\* — cannot read "
  COMMAND check --baseline ${CMAKE_CURRENT_BINARY_DIR}/no-such-baseline.json --format markdown)
