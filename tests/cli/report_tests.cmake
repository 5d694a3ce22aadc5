# `memplan report`: usage errors, a full run, and the headless-browser test of the HTML page.
memplan_cli_test("report needs --html" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: report: --html is required[^\n]+\n$"
  COMMAND report ${MEMPLAN_ZOO_DIR}/mlp.onnx --gpu 24G)
memplan_cli_test("report needs --gpu" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: --gpu is required[^\n]+\n$"
  COMMAND report ${MEMPLAN_ZOO_DIR}/mlp.onnx --html ${CMAKE_CURRENT_BINARY_DIR}/unused.html)
memplan_cli_test("report names a file it cannot write" EXPECT_EXIT 2
  EXPECT_OUTPUT "^memplan: cannot write '/nonexistent-dir/r.html': [^\n]+\n$"
  COMMAND report ${MEMPLAN_ZOO_DIR}/mlp.onnx --gpu 24G --html /nonexistent-dir/r.html)
memplan_cli_test("report prints the analysis and writes the page" EXPECT_EXIT 0
  EXPECT_OUTPUT "\"schema\": \"memplan/1\""
  COMMAND report ${MEMPLAN_ZOO_DIR}/mlp.onnx --gpu 24G --json
          --html ${CMAKE_CURRENT_BINARY_DIR}/report_mlp.html)

# Skipped (exit 77) where /usr/bin/chromium is absent.
add_test(NAME "report: the HTML report renders in a headless browser"
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/../report/browser_test.sh $<TARGET_FILE:memplan>
                 ${MEMPLAN_ZOO_DIR}/resnet18.onnx ${CMAKE_CURRENT_BINARY_DIR}/report_browser)
set_tests_properties("report: the HTML report renders in a headless browser" PROPERTIES
                     SKIP_RETURN_CODE 77 TIMEOUT 300)
