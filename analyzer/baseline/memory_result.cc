#include "analyzer/baseline/memory_result.h"

#include "analyzer/baseline/json_file.h"
#include "analyzer/program/category_bytes_json.h"

namespace memplan {
namespace {

Expected<int64_t> NonNegativeInt(const nlohmann::json& object, const std::string& key,
                                 const std::string& where) {
  auto it = object.find(key);
  if (it == object.end()) return MakeError(where + "'" + key + "' is missing");
  if (!IsInt64(*it) || it->get<int64_t>() < 0)
    return MakeError(where + "'" + key + "' must be an integer byte count >= 0");
  return it->get<int64_t>();
}

Expected<CategoryBytes> BreakdownFromJson(const nlohmann::json& object, const std::string& where) {
  auto it = object.find("breakdown");
  if (it == object.end() || !it->is_object())
    return MakeError(where + "'breakdown' is missing or not an object");
  CategoryBytes bytes;
  for (MemoryCategory category : kAllMemoryCategories) {
    MEMPLAN_TRY(bytes[category], NonNegativeInt(*it, std::string(MemoryCategoryName(category)),
                                                where + "breakdown "));
  }
  return bytes;
}

Expected<std::map<std::string, int64_t>> BytesByNodeFromJson(const nlohmann::json& object,
                                                             const std::string& where) {
  std::map<std::string, int64_t> bytes;
  if (!object.is_object()) return MakeError(where + "per-node saved bytes must be an object");
  for (const auto& [node, value] : object.items()) {
    if (!IsInt64(value) || value.get<int64_t>() < 0)
      return MakeError(where + "saved bytes of node '" + node + "' must be an integer >= 0");
    bytes[node] = value.get<int64_t>();
  }
  return bytes;
}

// The fields an analyze plan and a baseline result share; the two name the per-node saved bytes
// differently (`by_node_key`), and either may leave them out.
Expected<MemoryResult> MemoryResultFields(const nlohmann::json& object,
                                          const std::string& by_node_key,
                                          const std::string& where) {
  MemoryResult result;
  MEMPLAN_TRY(result.peak_bytes, NonNegativeInt(object, "peak_bytes", where));
  MEMPLAN_TRY(result.breakdown, BreakdownFromJson(object, where));
  MEMPLAN_TRY(result.saved_activation_bytes,
              NonNegativeInt(object, "saved_activation_bytes", where));
  auto by_node = object.find(by_node_key);
  if (by_node != object.end()) {
    MEMPLAN_TRY(result.saved_bytes_by_node, BytesByNodeFromJson(*by_node, where));
  }
  return result;
}

}  // namespace

Expected<MemoryResult> MemoryResultFromPlanJson(const nlohmann::json& plan_json) {
  const std::string where = "analyze output: ";
  if (!plan_json.is_object()) return MakeError(where + "not a JSON object");
  return MemoryResultFields(plan_json, kSavedActivationsByNodeKey, where);
}

Expected<MemoryResult> MemoryResultFromJson(const nlohmann::json& object,
                                            const std::string& where) {
  if (!object.is_object()) return MakeError(where + "'result' must be an object");
  return MemoryResultFields(object, "saved_bytes_by_node", where);
}

nlohmann::ordered_json MemoryResultToJson(const MemoryResult& result) {
  nlohmann::ordered_json out;
  out["peak_bytes"] = result.peak_bytes;
  out["breakdown"] = CategoryBytesJson(result.breakdown);
  out["saved_activation_bytes"] = result.saved_activation_bytes;
  nlohmann::ordered_json by_node = nlohmann::ordered_json::object();
  for (const auto& [node, bytes] : result.saved_bytes_by_node) by_node[node] = bytes;
  out["saved_bytes_by_node"] = by_node;
  return out;
}

}  // namespace memplan
