// Every bad input is an Error whose one-line message names the problem.

#include <catch2/catch.hpp>

#include "tests/graph/import_test_util.h"

namespace memplan {
namespace {

std::string ImportError(const std::string& fixture) {
  auto graph = ImportOnnxModel(testing::Fixture(fixture));
  INFO(fixture);
  REQUIRE_FALSE(graph.ok());
  const std::string& message = graph.error().message;
  CHECK(message.find('\n') == std::string::npos);
  return message;
}

using Catch::Matchers::Contains;

TEST_CASE("missing, empty and non-ONNX files are errors", "[import][bad-input]") {
  CHECK_THAT(ImportError("does_not_exist.onnx"),
             Contains("cannot open model file") && Contains("No such file or directory"));
  CHECK_THAT(ImportError("empty.onnx"), Contains("is empty"));
  CHECK_THAT(ImportError("random.onnx"), Contains("is not a valid ONNX model"));
  CHECK_THAT(ImportError("truncated.onnx"), Contains("is not a valid ONNX model"));
  auto dir = ImportOnnxModel(MEMPLAN_FIXTURES_DIR);
  REQUIRE_FALSE(dir.ok());
  CHECK_THAT(dir.error().message, Contains("is a directory"));
}

TEST_CASE("subgraph ops are rejected naming the node", "[import][bad-input]") {
  CHECK(ImportError("loop.onnx") ==
        "node 'the_loop' (Loop): subgraph ops (If, Loop, Scan) are not supported");
}

TEST_CASE("a cycle is reported, naming a node on it", "[import][bad-input]") {
  CHECK_THAT(ImportError("cycle.onnx"), Contains("cycle through node 'node_a'"));
}

TEST_CASE("an input nothing produces names the node and the input", "[import][bad-input]") {
  CHECK(ImportError("unproduced_input.onnx") ==
        "node 'adds_ghost' (Add): input 'ghost' is not produced by any node, graph input or "
        "initializer");
}

TEST_CASE("negative and overflowing dims are errors", "[import][bad-input]") {
  CHECK(ImportError("negative_dim.onnx") == "input 'x' has a negative dim -3 at axis 0");
  // 2^40 * 2^40 = 2^80 elements > 2^63.
  CHECK_THAT(ImportError("overflow_dim.onnx"),
             Contains("value 'x'") && Contains("overflows 64 bits"));
}

TEST_CASE("external data may not escape the model's folder", "[import][bad-input]") {
  CHECK(ImportError("external_escape.onnx") ==
        "initializer 'W': external data location '../x.bin' escapes the model's folder");
  CHECK_THAT(ImportError("external_absolute.onnx"),
             Contains("initializer 'W'") && Contains("'/etc/passwd'") && Contains("absolute"));
}

}  // namespace
}  // namespace memplan
