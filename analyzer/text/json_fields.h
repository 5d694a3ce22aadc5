#pragma once
// A struct's fields written into a JSON object under their own names, in the order listed:
//
//   MEMPLAN_JSON_FIELDS(j, plan, node, head, weight);
//   // j["node"] = plan.node; j["head"] = plan.head; j["weight"] = plan.weight;
//
// The reports' keys are mostly their fields' names; this states that mapping once. Keys named
// otherwise, or whose values are converted (enum names, sums), are written beside it by hand.
// Works on nlohmann::ordered_json, whose key order is the listed order (output stays stable);
// nlohmann 3.11.2's NLOHMANN_DEFINE_TYPE_* macros only write the sorted nlohmann::json.

#include <nlohmann/json.hpp>

#define MEMPLAN_JSON_FIELD_(field) memplan_json_fields_j[#field] = memplan_json_fields_t.field;

#define MEMPLAN_JSON_FIELDS(json, object, ...)                                  \
  do {                                                                          \
    auto& memplan_json_fields_j = (json);                                       \
    const auto& memplan_json_fields_t = (object);                               \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(MEMPLAN_JSON_FIELD_, __VA_ARGS__)) \
  } while (false)
