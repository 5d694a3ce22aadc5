#include "analyzer/baseline/baseline.h"

#include <optional>
#include <string_view>

#include "analyzer/baseline/config_list.h"
#include "analyzer/baseline/json_file.h"
#include "analyzer/text/markup.h"

namespace memplan {
namespace {

constexpr const char* kLargestFittingKey = "largest_fitting_micro_batch";

}  // namespace

const BaselineEntry* Baseline::Find(const std::string& name) const {
  for (const BaselineEntry& entry : entries)
    if (entry.config.name == name) return &entry;
  return nullptr;
}

Expected<Baseline> BaselineFromJson(const nlohmann::json& json) {
  MEMPLAN_RETURN_IF_ERROR(CheckSchema(json, kBaselineSchema, "baseline"));
  auto list = json.find("configurations");
  if (list == json.end() || !list->is_array())
    return MakeError("baseline: 'configurations' must be an array");
  // A baseline of nothing would let every check pass.
  if (list->empty())
    return MakeError("baseline: 'configurations' is empty; record one with `memplan baseline`");
  Baseline baseline;
  MEMPLAN_RETURN_IF_ERROR(ForEachConfiguration(
      *list, "baseline", [&](CheckConfiguration config, const nlohmann::json& item) -> Status {
        auto result = item.find("result");
        std::string where = "configuration '" + config.name + "': ";
        if (result == item.end()) return MakeError(where + "'result' is missing");
        MEMPLAN_TRY(MemoryResult memory, MemoryResultFromJson(*result, where));
        BaselineEntry entry{std::move(config), std::move(memory)};
        if (auto plan = item.find("plan"); plan != item.end()) {
          MEMPLAN_TRY(entry.plan, PlanFlagsFromJson(*plan, where + "'plan': "));
        }
        if (auto largest = item.find(kLargestFittingKey); largest != item.end()) {
          if (!IsInt64(*largest) || largest->get<int64_t>() < 0)
            return MakeError(where + "'" + kLargestFittingKey + "' must be an integer >= 0");
          entry.largest_fitting_micro_batch = largest->get<int64_t>();
        }
        baseline.entries.push_back(std::move(entry));
        return OkStatus();
      }));
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
    if (entry.plan) item["plan"] = PlanFlagsToJson(*entry.plan);
    if (entry.largest_fitting_micro_batch)
      item[kLargestFittingKey] = *entry.largest_fitting_micro_batch;
    item["result"] = MemoryResultToJson(entry.result);
    list.push_back(item);
  }
  out["configurations"] = list;
  return out;
}

Expected<Baseline> ReadBaseline(const std::filesystem::path& path) {
  return ReadJsonDocument(path, &BaselineFromJson);
}

Status WriteBaseline(const Baseline& baseline, const std::filesystem::path& path) {
  return WriteTextFile(path.string(), BaselineToJson(baseline).dump(2) + "\n");
}

namespace {

// The value of a `"name": "..."` member on one line of pretty-printed JSON (no escapes inside), or
// nullopt.
std::optional<std::string> NameMemberOnLine(std::string_view line) {
  static constexpr std::string_view kKey = "\"name\"";
  const size_t key = line.find(kKey);
  if (key == std::string_view::npos) return std::nullopt;
  size_t i = key + kKey.size();
  auto skip_spaces = [&] {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  };
  skip_spaces();
  if (i >= line.size() || line[i] != ':') return std::nullopt;
  ++i;
  skip_spaces();
  if (i >= line.size() || line[i] != '"') return std::nullopt;
  const size_t begin = ++i;
  while (i < line.size() && line[i] != '"' && line[i] != '\\') ++i;
  if (i >= line.size() || line[i] != '"') return std::nullopt;
  return std::string(line.substr(begin, i - begin));
}

}  // namespace

std::map<std::string, int> ConfigurationLines(const std::string& baseline_text) {
  std::map<std::string, int> lines;
  int line_number = 0;
  size_t begin = 0;
  while (begin <= baseline_text.size()) {
    size_t end = baseline_text.find('\n', begin);
    if (end == std::string::npos) end = baseline_text.size();
    ++line_number;
    const std::string_view line = std::string_view(baseline_text).substr(begin, end - begin);
    if (std::optional<std::string> name = NameMemberOnLine(line))
      lines.emplace(std::move(*name), line_number);
    begin = end + 1;
  }
  return lines;
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
