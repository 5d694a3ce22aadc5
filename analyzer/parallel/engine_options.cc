#include "analyzer/parallel/engine_options.h"

#include <array>
#include <charconv>
#include <string>

#include "graph/checked_math.h"

namespace memplan {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// One settable engine setting: its name, where DataParallelOptions keeps it, in what unit.
struct EngineOption {
  std::string_view name;
  int64_t DataParallelOptions::*integer = nullptr;  // whole-number settings
  bool DataParallelOptions::*flag = nullptr;        // true|false settings
  int64_t unit = 1;                                 // bytes per unit of the value (MiB: 2^20)
  int64_t minimum = 1;
  // What a flag setting is written as: true|false, or the engine's two words for it.
  std::string_view on = "true";
  std::string_view off = "false";
};

constexpr std::array<EngineOption, 11> kEngineOptions = {{
    {"bucket_cap_mb", &DataParallelOptions::ddp_bucket_cap_bytes, nullptr, kMiB, 1},
    {"gradient_as_bucket_view", nullptr, &DataParallelOptions::ddp_gradient_as_bucket_view, 1, 0},
    {"reduce_bucket_size", &DataParallelOptions::zero_reduce_bucket_elements, nullptr, 1, 1},
    {"allgather_bucket_size", &DataParallelOptions::zero_allgather_bucket_elements, nullptr, 1, 1},
    {"stage3_param_persistence_threshold", &DataParallelOptions::zero3_param_persistence_threshold,
     nullptr, 1, 0},
    {"stage3_prefetch_bucket_size", &DataParallelOptions::zero3_prefetch_bucket_elements, nullptr,
     1, 1},
    {"stage3_max_live_parameters", &DataParallelOptions::zero3_max_live_parameters, nullptr, 1, 1},
    {"min_num_params", &DataParallelOptions::fsdp_min_unit_parameters, nullptr, 1, 0},
    {"auto_wrap_policy", nullptr, &DataParallelOptions::fsdp_wrap_blocks, 1, 0, "transformer",
     "size"},
    {"reshard_after_forward", nullptr, &DataParallelOptions::reshard_after_forward, 1, 0},
    {"prefetch_units", &DataParallelOptions::prefetch_units, nullptr, 1, 0},
}};

std::string KnownNames() {
  std::string names;
  for (const EngineOption& o : kEngineOptions)
    names += (names.empty() ? "" : ", ") + std::string(o.name);
  return names;
}

const EngineOption* Find(std::string_view name) {
  for (const EngineOption& o : kEngineOptions)
    if (o.name == name) return &o;
  return nullptr;
}

Status SetInteger(const EngineOption& o, int64_t value, DataParallelOptions& options) {
  if (value < o.minimum)
    return MakeError("engine option " + std::string(o.name) + " must be at least " +
                     std::to_string(o.minimum) + ", got " + std::to_string(value));
  const std::optional<int64_t> scaled = CheckedMul(value, o.unit);
  if (!scaled)
    return MakeError("engine option " + std::string(o.name) +
                     " is too large: " + std::to_string(value));
  options.*o.integer = *scaled;
  return OkStatus();
}

Status Set(std::string_view name, std::string_view value, DataParallelOptions& options) {
  const EngineOption* o = Find(name);
  if (o == nullptr)
    return MakeError("unknown engine option '" + std::string(name) + "' (known: " + KnownNames() +
                     ")");
  if (o->flag != nullptr) {
    if (value != o->on && value != o->off)
      return MakeError("engine option " + std::string(name) + " must be " + std::string(o->on) +
                       " or " + std::string(o->off) + ", got '" + std::string(value) + "'");
    options.*o->flag = value == o->on;
    return OkStatus();
  }
  int64_t number = 0;
  const char* end = value.data() + value.size();
  auto [stop, error] = std::from_chars(value.data(), end, number);
  if (value.empty() || error != std::errc() || stop != end)
    return MakeError("engine option " + std::string(name) + " must be a whole number, got '" +
                     std::string(value) + "'");
  return SetInteger(*o, number, options);
}

}  // namespace

Status ApplyEngineOptions(std::string_view text, DataParallelOptions& options) {
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view pair = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const size_t equals = pair.find('=');
    if (equals == std::string_view::npos || equals == 0)
      return MakeError("engine options are name=value pairs separated by commas, got '" +
                       std::string(pair) + "'");
    MEMPLAN_RETURN_IF_ERROR(Set(pair.substr(0, equals), pair.substr(equals + 1), options));
  }
  return OkStatus();
}

nlohmann::ordered_json EngineOptionsToJson(const DataParallelOptions& options) {
  const DataParallelOptions defaults;
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const EngineOption& o : kEngineOptions) {
    if (o.flag != nullptr) {
      if (options.*o.flag == defaults.*o.flag) continue;
      if (o.on == "true") {
        j[std::string(o.name)] = options.*o.flag;
      } else {
        j[std::string(o.name)] = std::string(options.*o.flag ? o.on : o.off);
      }
    } else if (options.*o.integer != defaults.*o.integer) {
      j[std::string(o.name)] = options.*o.integer / o.unit;
    }
  }
  return j;
}

Status EngineOptionsFromJson(const nlohmann::json& object, DataParallelOptions& options) {
  if (!object.is_object()) return MakeError("'plan.engine_options' is not an object");
  for (const auto& [name, value] : object.items()) {
    const EngineOption* o = Find(name);
    const std::string field = "'plan.engine_options." + name + "'";
    if (o == nullptr)
      return MakeError(field + " is no engine option (known: " + KnownNames() + ")");
    if (o->flag != nullptr) {
      if (o->on == "true") {
        if (!value.is_boolean()) return MakeError(field + " is not true or false");
        options.*o->flag = value.get<bool>();
      } else {
        if (!value.is_string() ||
            (value.get<std::string>() != o->on && value.get<std::string>() != o->off))
          return MakeError(field + " is not \"" + std::string(o->on) + "\" or \"" +
                           std::string(o->off) + "\"");
        options.*o->flag = value.get<std::string>() == o->on;
      }
      continue;
    }
    if (!value.is_number_integer()) return MakeError(field + " is not a whole number");
    if (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t{INT64_MAX})
      return MakeError(field + " is too large");
    MEMPLAN_RETURN_IF_ERROR(SetInteger(*o, value.get<int64_t>(), options));
  }
  return OkStatus();
}

}  // namespace memplan
