// Every bad input is an Error whose one-line message names the problem.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>

#include "tests/graph/import_test_util.h"
#include "tests/test_paths.h"

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
  auto dir = ImportOnnxModel(memplan::testing::FixturesDir());
  REQUIRE_FALSE(dir.ok());
  CHECK_THAT(dir.error().message, Contains("is a directory"));
}

TEST_CASE("subgraph ops are rejected naming the node", "[import][bad-input]") {
  CHECK(ImportError("loop.onnx") ==
        "node 'the_loop' (Loop): subgraph ops (If, Loop, Scan) are not supported");
}

TEST_CASE("a cycle is reported, naming its nodes in dependency order", "[import][bad-input]") {
  // cycle.onnx: node_a = Add(x, b) and node_b = Relu(a), so node_a feeds node_b feeds node_a.
  CHECK(ImportError("cycle.onnx") ==
        "the graph has a cycle: node 'node_a' (Add) -> node 'node_b' (Relu) -> node 'node_a'");
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

namespace memplan {
namespace {

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Writes `bytes` to a scratch file and imports it: the result may be a graph or an error, but
// never a crash, an abort or an uncaught exception (the sanitizer CI job runs this too).
bool ImportsOrErrors(const std::filesystem::path& scratch, const std::string& bytes) {
  {
    std::ofstream out(scratch, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  auto graph = ImportOnnxModel(scratch.string());
  return graph.ok() || !graph.error().message.empty();
}

TEST_CASE("every truncation and seeded corruption of a model is handled", "[import][bad-input]") {
  auto dir = std::filesystem::temp_directory_path() / "memplan_import_corruption_test";
  std::filesystem::create_directories(dir);
  const auto scratch = dir / "model.onnx";

  const std::string mlp = ReadBytes(testing::Fixture("tiny_mlp.onnx"));
  REQUIRE(mlp.size() > 1000);
  for (size_t n = 0; n < mlp.size(); n += 7) CHECK(ImportsOrErrors(scratch, mlp.substr(0, n)));

  const std::string gpt = ReadBytes(testing::Fixture("gpt_opset13.onnx"));
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 200; ++trial) {
    std::string bytes = gpt;
    for (int flips = 0; flips < 4; ++flips)
      bytes[rng() % bytes.size()] = static_cast<char>(rng() & 0xff);
    CHECK(ImportsOrErrors(scratch, bytes));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace memplan
