#pragma once
// What a baseline records per configuration: the predicted peak, its breakdown by category, the
// bytes saved for backward, and those saved bytes per node — so a regression can name the nodes
// whose saved activations grew.

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>
#include "analyzer/program/memory_category.h"
#include "graph/expected.h"

namespace memplan {

struct MemoryResult {
  int64_t peak_bytes = 0;
  CategoryBytes breakdown;  // bytes at the peak, by category
  int64_t saved_activation_bytes = 0;
  // ONNX node name -> bytes its forward saves for backward (one micro-batch). Nodes saving
  // nothing may be left out; a missing node reads as 0.
  std::map<std::string, int64_t> saved_bytes_by_node;

  bool operator==(const MemoryResult& other) const {
    return peak_bytes == other.peak_bytes && breakdown.bytes == other.breakdown.bytes &&
           saved_activation_bytes == other.saved_activation_bytes &&
           saved_bytes_by_node == other.saved_bytes_by_node;
  }
};

// The JSON key under which `memplan analyze --json` is expected to list per-node saved bytes
// (an object node name -> bytes). Proposed addition to docs/json_schema.md; optional on read.
inline constexpr const char* kSavedActivationsByNodeKey = "saved_activations_by_node";

// Reads a result from the object `memplan analyze --json` prints: peak_bytes, breakdown (all
// seven categories), saved_activation_bytes, and saved_activations_by_node when present.
Expected<MemoryResult> MemoryResultFromPlanJson(const nlohmann::json& plan_json);

// The baseline file's "result" object: same keys, with per-node bytes under "saved_bytes_by_node".
Expected<MemoryResult> MemoryResultFromJson(const nlohmann::json& result, const std::string& where);
nlohmann::ordered_json MemoryResultToJson(const MemoryResult& result);

}  // namespace memplan
