#pragma once
// Helpers shared by the import tests: fixture paths and lookups by name with clear failures.

#include <catch2/catch.hpp>

#include <string>

#include "graph/graph.h"
#include "graph/onnx_import.h"
#include "tests/test_paths.h"

namespace memplan::testing {

inline std::string Fixture(const std::string& name) {
  return memplan::testing::FixturesDir() + "/" + name;
}

// Imports a fixture that must import; fails the test with the error otherwise.
inline Graph ImportFixture(const std::string& name, const ImportOptions& options = {}) {
  auto graph = ImportOnnxModel(Fixture(name), options);
  INFO("importing " << name);
  if (!graph.ok()) FAIL(graph.error().message);
  return std::move(graph).value();
}

inline const Value& ValueNamed(const Graph& graph, const std::string& name) {
  auto id = graph.FindValue(name);
  INFO("value " << name);
  REQUIRE(id.has_value());
  return graph.value(*id);
}

inline std::string ShapeOf(const Graph& graph, const std::string& name) {
  return ValueNamed(graph, name).shape.ToString(graph.symbols());
}

// Sum of element counts of kParameter values (all must be constant-shaped).
inline int64_t ParameterCount(const Graph& graph) {
  int64_t total = 0;
  for (const Value& v : graph.values()) {
    if (v.kind != ValueKind::kParameter) continue;
    auto n = v.shape.NumElements().constant_value();
    REQUIRE(n.has_value());
    total += *n;
  }
  return total;
}

inline bool HasWarningContaining(const Graph& graph, const std::string& text) {
  for (const auto& w : graph.warnings)
    if (w.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace memplan::testing
