// memplan's importer on the zoo: every model imports without its weight file, its parameters
// (ValueKind::kParameter) sum to the published count, and shape propagation leaves no floating
// tensor with an unknown shape or an unresolved ("unk_") dimension.

#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "graph/dtype.h"
#include "graph/graph.h"
#include "graph/onnx_import.h"

namespace memplan {
namespace {

struct ZooCount {
  std::string model;
  int64_t parameters;
};

// The published counts; zoo_param_count_test.cc derives each of them.
const std::vector<ZooCount>& ZooCounts() {
  static const std::vector<ZooCount> counts = {
      {"mlp", 1'863'690},         {"resnet18", 11'689'512},    {"resnet50", 25'557'032},
      {"bert_base", 109'482'240}, {"gpt2_small", 124'439'808}, {"gpt2_xl", 1'557'611'200},
      {"vit_b16", 86'567'656},
  };
  return counts;
}

Graph ImportZooModel(const std::string& model) {
  const std::string path = std::string(MEMPLAN_ZOO_DIR) + "/" + model + ".onnx";
  auto graph = ImportOnnxModel(path);
  if (!graph.ok()) FAIL("importing " << path << ": " << graph.error().message);
  return std::move(graph).value();
}

}  // namespace

TEST_CASE("zoo models import with the published parameter counts", "[zoo][import]") {
  for (const ZooCount& expected : ZooCounts()) {
    INFO(expected.model);
    const Graph graph = ImportZooModel(expected.model);
    int64_t parameters = 0;
    for (const Value& value : graph.values()) {
      if (value.kind != ValueKind::kParameter) continue;
      auto n = value.shape.NumElements().constant_value();
      REQUIRE(n.has_value());
      parameters += *n;
    }
    CHECK(parameters == expected.parameters);
  }
}

TEST_CASE("zoo models import with every floating activation shape resolved", "[zoo][import]") {
  for (const ZooCount& expected : ZooCounts()) {
    INFO(expected.model);
    const Graph graph = ImportZooModel(expected.model);
    REQUIRE(graph.batch_symbol().has_value());
    CHECK(graph.symbols().Name(*graph.batch_symbol()) == "batch");
    int unresolved = 0;
    for (const Value& value : graph.values()) {
      if (value.kind != ValueKind::kIntermediate || !IsFloating(value.dtype)) continue;
      const std::string shape = value.shape.ToString(graph.symbols());
      if (!value.shape.known || shape.find("unk_") != std::string::npos) {
        // Report the first few by name; the count says how many.
        if (++unresolved <= 5) UNSCOPED_INFO(value.name << " has shape " << shape);
      }
    }
    CHECK(unresolved == 0);
  }
}

}  // namespace memplan
