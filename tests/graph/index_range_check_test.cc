// Gather rows beyond a table under the bindings (issue 45, graph/index_range_check.h): position
// ids from a Range read a table with fewer rows than the bound sequence length.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "graph/bind_symbols.h"
#include "graph/index_range_check.h"
#include "tests/graph/import_test_util.h"
#include "tests/graph/proto_model.h"

namespace memplan {
namespace {

using Catch::Matchers::Contains;
using onnx::TensorProto;
using testing::ProtoDim;
using testing::ProtoModel;

std::vector<std::string> WarningsAt(const Graph& graph, const std::string& symbol, int64_t value) {
  auto bindings = BindSymbols(graph, /*batch=*/2, {DimBinding{symbol, value}});
  REQUIRE(bindings.ok());
  return IndexRangeWarnings(graph, *bindings);
}

TEST_CASE("position ids beyond the position table warn with the largest valid value",
          "[symbols][bad-input]") {
  // ids[batch, seq] -> wpe[16, 8](Range(0, seq, 1)) (tests/fixtures/make_hostile_fixtures.py).
  Graph graph = testing::ImportFixture("hostile/position_table.onnx");
  // seq = 32 reads rows 0..31; row 31 is beyond rows 0..15, and seq = 16 reads rows 0..15.
  std::vector<std::string> warnings = WarningsAt(graph, "seq", 32);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] ==
        "node 'wpe_lookup' (Gather) reads row 31 of 'wpe', which has 16 rows, at seq = 32: "
        "PyTorch raises an index error there; the largest seq this table serves is 16");
  CHECK(WarningsAt(graph, "seq", 16).empty());
  CHECK(WarningsAt(graph, "seq", 1).empty());
  // 17 is the first value beyond: row 16.
  REQUIRE(WarningsAt(graph, "seq", 17).size() == 1);
  CHECK_THAT(WarningsAt(graph, "seq", 17)[0], Contains("reads row 16 of 'wpe'"));
}

TEST_CASE("a strided Range is judged by the last row it reads", "[symbols][bad-input]") {
  // y = Gather(table[15, 4], Range(0, s, 2)): rows 0, 2, ..., 2 * (ceil(s / 2) - 1). s = 16
  // reads row 14 (inside 0..14); s = 17 reads 9 rows, the last 16: beyond. Largest s: 16.
  ProtoModel m(/*opset=*/13);
  m.Input("x", TensorProto::FLOAT, {std::string("batch"), std::string("s")});
  m.Initializer("table", TensorProto::FLOAT, {15, 4});
  m.Int64s("one", {1});
  m.Int64s("zero", {0});
  m.Int64s("two", {2});
  m.Node("Shape", {"x"}, {"shape"});
  testing::SetInt(m.Node("Gather", {"shape", "one"}, {"s1"}), "axis", 0);
  m.Node("Squeeze", {"s1"}, {"s"});
  m.Node("Squeeze", {"zero"}, {"start"});
  m.Node("Squeeze", {"two"}, {"delta"});
  m.Node("Range", {"start", "s", "delta"}, {"rows"});
  testing::SetInt(m.Node("Gather", {"table", "rows"}, {"y"}), "axis", 0);
  m.Output("y", TensorProto::FLOAT, std::vector<ProtoDim>{std::string("n"), int64_t{4}});
  Graph graph = m.Import("strided_range_table.onnx");
  CHECK(WarningsAt(graph, "s", 16).empty());
  std::vector<std::string> warnings = WarningsAt(graph, "s", 17);
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Contains("reads row 16 of 'table', which has 15 rows, at s = 17") &&
                              Contains("the largest s this table serves is 16"));
}

TEST_CASE("indices that are not a Range, or unbound, are not judged", "[symbols][bad-input]") {
  // Token ids are data: only the position Gather has known rows; without --dim seq nothing is
  // bound and nothing is said.
  Graph graph = testing::ImportFixture("hostile/position_table.onnx");
  auto bindings = BindSymbols(graph, /*batch=*/2, {});
  REQUIRE(bindings.ok());
  CHECK(IndexRangeWarnings(graph, *bindings).empty());
}

}  // namespace
}  // namespace memplan
