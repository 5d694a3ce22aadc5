#include "analyzer/baseline/baseline.h"

#include <fstream>
#include <set>

#include "analyzer/baseline/config_list.h"
#include "analyzer/baseline/json_file.h"

namespace memplan {

const BaselineEntry* Baseline::Find(const std::string& name) const {
  for (const BaselineEntry& entry : entries)
    if (entry.config.name == name) return &entry;
  return nullptr;
}

Expected<Baseline> BaselineFromJson(const nlohmann::json& json) {
  if (!json.is_object() || json.value("schema", std::string()) != kBaselineSchema)
    return MakeError(std::string("not a memplan baseline: expected \"schema\": \"") +
                     kBaselineSchema + "\"");
  auto list = json.find("configurations");
  if (list == json.end() || !list->is_array())
    return MakeError("baseline: 'configurations' must be an array");
  Baseline baseline;
  std::set<std::string> names;
  for (size_t i = 0; i < list->size(); ++i) {
    const nlohmann::json& item = (*list)[i];
    MEMPLAN_TRY(CheckConfiguration config, CheckConfigurationFromJson(item, i));
    if (!names.insert(config.name).second)
      return MakeError("baseline: configuration name '" + config.name + "' appears twice");
    auto result = item.find("result");
    std::string where = "configuration '" + config.name + "': ";
    if (result == item.end()) return MakeError(where + "'result' is missing");
    MEMPLAN_TRY(MemoryResult memory, MemoryResultFromJson(*result, where));
    baseline.entries.push_back(BaselineEntry{std::move(config), std::move(memory)});
  }
  return baseline;
}

nlohmann::ordered_json BaselineToJson(const Baseline& baseline) {
  nlohmann::ordered_json out;
  out["schema"] = kBaselineSchema;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const BaselineEntry& entry : baseline.entries) {
    nlohmann::ordered_json item;
    item["name"] = entry.config.name;
    item["model"] = entry.config.model;
    item["flags"] = PlanFlagsToJson(entry.config.flags);
    item["result"] = MemoryResultToJson(entry.result);
    list.push_back(item);
  }
  out["configurations"] = list;
  return out;
}

Expected<Baseline> ReadBaseline(const std::filesystem::path& path) {
  MEMPLAN_TRY(nlohmann::json json, ReadJsonFile(path));
  Expected<Baseline> baseline = BaselineFromJson(json);
  if (!baseline.ok()) return MakeError(path.string() + ": " + baseline.error().message);
  baseline->directory = path.parent_path();
  return baseline;
}

Status WriteBaseline(const Baseline& baseline, const std::filesystem::path& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return MakeError("cannot write baseline " + path.string());
  out << BaselineToJson(baseline).dump(2) << '\n';
  out.close();
  if (!out) return MakeError("cannot write baseline " + path.string());
  return OkStatus();
}

std::filesystem::path ResolveModelPath(const std::filesystem::path& directory,
                                       const std::string& model) {
  std::filesystem::path path(model);
  if (path.is_absolute()) return path;
  return (directory / path).lexically_normal();
}

std::string ModelPathRelativeTo(const std::filesystem::path& model,
                                const std::filesystem::path& listing_file) {
  std::filesystem::path model_abs = std::filesystem::absolute(model).lexically_normal();
  std::filesystem::path dir_abs =
      std::filesystem::absolute(listing_file).lexically_normal().parent_path();
  std::filesystem::path relative = model_abs.lexically_relative(dir_abs);
  if (relative.empty()) return model_abs.generic_string();  // e.g. another Windows drive
  return relative.generic_string();
}

}  // namespace memplan
