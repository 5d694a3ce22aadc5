# A Hugging Face config as the model (issue 43, item 3): analyzer/pipeline/hugging_face_config.h.
set(HF_CONFIGS ${MEMPLAN_TEST_FIXTURES}/hf_configs)

# Ten families converted, planned and verified on the CPU runtime, where a Python with torch and
# transformers exists (skipped in CI, which has no torch venv).
add_test(NAME "cli: Hugging Face configs of ten families convert, plan and verify"
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/hf_config_test.sh $<TARGET_FILE:memplan>
                 ${HF_CONFIGS} ${CMAKE_CURRENT_BINARY_DIR}/hf_configs)
set_tests_properties("cli: Hugging Face configs of ten families convert, plan and verify" PROPERTIES
                     SKIP_RETURN_CODE 77 TIMEOUT 900)

# Without torch and transformers: one line naming the Python and how to install them, exit 2.
memplan_cli_test("a Hugging Face config without transformers is one line naming the fix"
  EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: '[^']*/llama' is a Hugging Face config; converting it needs torch, transformers and onnx \\(No module named '[a-z_]+'\\) in [^ ]*python_without_site.sh: tools/setup_torch_env.sh installs them, MEMPLAN_PYTHON names the Python to use\n$"
  COMMAND analyze ${HF_CONFIGS}/llama --gpu 24G)
set_tests_properties("cli: a Hugging Face config without transformers is one line naming the fix"
  PROPERTIES ENVIRONMENT
  "MEMPLAN_PYTHON=${CMAKE_CURRENT_SOURCE_DIR}/python_without_site.sh;MEMPLAN_CACHE_DIR=${CMAKE_CURRENT_BINARY_DIR}/hf_no_python")

memplan_cli_test("a Hugging Face config with no Python to run is one line" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: cannot run /nonexistent/python3: No such file or directory\n$"
  COMMAND analyze ${HF_CONFIGS}/gpt2/config.json --gpu 24G)
set_tests_properties("cli: a Hugging Face config with no Python to run is one line"
  PROPERTIES ENVIRONMENT
  "MEMPLAN_PYTHON=/nonexistent/python3;MEMPLAN_CACHE_DIR=${CMAKE_CURRENT_BINARY_DIR}/hf_no_python")

memplan_cli_test("a directory without config.json is not a model, one line" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: cannot open model '[^']*hf_configs': it is a directory without a Hugging Face config.json\n$"
  COMMAND analyze ${HF_CONFIGS} --gpu 24G)
