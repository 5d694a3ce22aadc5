#include "profiler/profile_json.h"

#include <cmath>
#include <utility>

#include "analyzer/baseline/json_file.h"
#include "analyzer/text/json_fields.h"
#include "analyzer/text/markup.h"

namespace memplan::profiler {
namespace {

using nlohmann::json;

// A measured time above a day for one node is not a measurement: summing such values over a
// program (and over micro-batches) overflows to infinity, which JSON can only write as null.
constexpr double kMaxMeasuredSeconds = 86400.0;

// Field readers: `where` names the object ("profile.json: nodes[3]") for the error message.
Expected<double> ReadSeconds(const json& object, const char* key, const std::string& where,
                             bool required) {
  auto it = object.find(key);
  if (it == object.end()) {
    if (!required) return 0.0;
    return MakeError(where + ": missing \"" + key + "\"");
  }
  if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0) {
    return MakeError(where + ": \"" + key + "\" must be a non-negative number of seconds");
  }
  if (it->get<double>() > kMaxMeasuredSeconds) {
    return MakeError(where + ": \"" + key + "\" is " + it->dump() +
                     " s, more than a day for one node; this is not a measured profile");
  }
  return it->get<double>();
}

Expected<int64_t> ReadBytes(const json& object, const char* key, const std::string& where,
                            bool required) {
  auto it = object.find(key);
  if (it == object.end()) {
    if (!required) return int64_t{0};
    return MakeError(where + ": missing \"" + key + "\"");
  }
  if (!IsInt64(*it) || it->get<int64_t>() < 0) {
    return MakeError(where + ": \"" + key + "\" must be a non-negative integer number of bytes");
  }
  return it->get<int64_t>();
}

Expected<std::string> ReadString(const json& object, const char* key, const std::string& where,
                                 bool required) {
  auto it = object.find(key);
  if (it == object.end()) {
    if (!required) return std::string();
    return MakeError(where + ": missing \"" + key + "\"");
  }
  if (!it->is_string()) return MakeError(where + ": \"" + key + "\" must be a string");
  return it->get<std::string>();
}

Expected<std::pair<std::string, MeasuredNode>> ParseNode(const json& entry,
                                                         const std::string& where) {
  if (!entry.is_object()) return MakeError(where + ": must be an object");
  MEMPLAN_TRY(std::string name, ReadString(entry, "name", where, /*required=*/true));
  if (name.empty()) return MakeError(where + ": \"name\" must not be empty");
  MeasuredNode node;
  MEMPLAN_TRY(node.forward_seconds, ReadSeconds(entry, "forward_seconds", where, true));
  MEMPLAN_TRY(node.backward_seconds, ReadSeconds(entry, "backward_seconds", where, true));
  MEMPLAN_TRY(node.recompute_seconds, ReadSeconds(entry, "recompute_seconds", where, false));
  MEMPLAN_TRY(node.workspace_bytes, ReadBytes(entry, "workspace_bytes", where, true));
  MEMPLAN_TRY(node.activation_bytes, ReadBytes(entry, "activation_bytes", where, false));
  return std::make_pair(std::move(name), node);
}

}  // namespace

json ProfileToJson(const AttributedProfile& profile, const ProfileSource& source) {
  json nodes = json::array();
  for (const NodeProfile& node : profile.nodes) {
    json entry;
    entry["name"] = node.node;
    MEMPLAN_JSON_FIELDS(entry, node, forward_seconds, backward_seconds, recompute_seconds,
                        forward_runs, backward_runs, recompute_runs, workspace_bytes,
                        activation_bytes);
    nodes.push_back(std::move(entry));
  }
  // nlohmann::json sorts its keys: the file's order does not depend on the order written here.
  json j;
  j["schema"] = kProfileSchema;
  MEMPLAN_JSON_FIELDS(j, source, model, device);
  MEMPLAN_JSON_FIELDS(j, profile, device_peak_bytes, baseline_bytes, allocator_bytes_at_peak,
                      library_bytes_at_peak, allocator_peak_bytes, activation_bytes, device_seconds,
                      unattributed_seconds, dropped_records);
  j["nodes"] = std::move(nodes);
  return j;
}

Status WriteProfile(const std::filesystem::path& path, const AttributedProfile& profile,
                    const ProfileSource& source) {
  return WriteTextFile(path.string(), ProfileToJson(profile, source).dump(2) + "\n");
}

Expected<MeasuredProfile> ParseProfile(const json& document, std::string_view source) {
  const std::string where(source);
  if (!document.is_object()) return MakeError(where + ": a profile must be a JSON object");
  MEMPLAN_TRY(std::string schema, ReadString(document, "schema", where, /*required=*/true));
  if (schema != kProfileSchema) {
    return MakeError(where + ": unsupported schema \"" + schema + "\" (expected \"" +
                     std::string(kProfileSchema) + "\")");
  }
  MeasuredProfile profile;
  MEMPLAN_TRY(profile.model, ReadString(document, "model", where, false));
  MEMPLAN_TRY(profile.device, ReadString(document, "device", where, false));
  MEMPLAN_TRY(profile.device_peak_bytes, ReadBytes(document, "device_peak_bytes", where, true));
  MEMPLAN_TRY(profile.activation_bytes, ReadBytes(document, "activation_bytes", where, false));
  auto nodes = document.find("nodes");
  if (nodes == document.end()) return MakeError(where + ": missing \"nodes\"");
  if (!nodes->is_array()) return MakeError(where + ": \"nodes\" must be an array");
  for (size_t i = 0; i < nodes->size(); ++i) {
    const std::string node_where = where + ": nodes[" + std::to_string(i) + "]";
    MEMPLAN_TRY(auto entry, ParseNode((*nodes)[i], node_where));
    if (!profile.nodes.emplace(entry.first, entry.second).second) {
      return MakeError(node_where + ": node \"" + entry.first + "\" is listed twice");
    }
  }
  return profile;
}

Expected<MeasuredProfile> ReadProfile(const std::filesystem::path& path) {
  MEMPLAN_TRY(json document, ReadJsonFile(path));
  return ParseProfile(document, path.string());
}

MeasuredNodeTimes ToMeasuredNodeTimes(const MeasuredProfile& profile) {
  MeasuredNodeTimes measured;
  for (const auto& [name, node] : profile.nodes)
    measured[name] = MeasuredNodeTime{node.forward_seconds, node.backward_seconds,
                                      /*has_backward=*/node.backward_seconds > 0};
  return measured;
}

}  // namespace memplan::profiler
