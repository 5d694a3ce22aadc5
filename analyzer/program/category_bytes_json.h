#pragma once
// Bytes per memory category as JSON: the "breakdown" objects of `analyze --json`, the offload
// report, `verify --json` and baseline files, all keyed by category name in kAllMemoryCategories
// order (analyzer/baseline/memory_result.cc reads them back).

#include <string>

#include <nlohmann/json.hpp>

#include "analyzer/program/memory_category.h"

namespace memplan {

inline nlohmann::ordered_json CategoryBytesJson(const CategoryBytes& bytes) {
  nlohmann::ordered_json j;
  for (MemoryCategory c : kAllMemoryCategories) j[std::string(MemoryCategoryName(c))] = bytes[c];
  return j;
}

}  // namespace memplan
