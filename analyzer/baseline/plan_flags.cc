#include "analyzer/baseline/plan_flags.h"

#include "analyzer/baseline/json_file.h"

namespace memplan {
namespace {

Expected<int64_t> PositiveInt(const nlohmann::json& value, const std::string& what) {
  if (!IsInt64(value) || value.get<int64_t>() < 1)
    return MakeError(what + " must be an integer >= 1");
  return value.get<int64_t>();
}

Expected<std::string> NonEmptyString(const nlohmann::json& value, const std::string& what) {
  if (!value.is_string() || value.get<std::string>().empty())
    return MakeError(what + " must be a non-empty string");
  return value.get<std::string>();
}

}  // namespace

Expected<PlanFlags> PlanFlagsFromJson(const nlohmann::json& flags, const std::string& where) {
  if (!flags.is_object()) return MakeError(where + "'flags' must be an object");
  PlanFlags result;
  for (const auto& [key, value] : flags.items()) {
    std::string what = where + "flag '" + key + "'";
    if (key == "batch") {
      MEMPLAN_TRY(result.batch, PositiveInt(value, what));
    } else if (key == "dims") {
      if (!value.is_object()) return MakeError(what + " must be an object of name: size");
      for (const auto& [name, size] : value.items()) {
        MEMPLAN_TRY(result.dims[name], PositiveInt(size, what + " '" + name + "'"));
      }
    } else if (key == "precision") {
      MEMPLAN_TRY(result.precision, NonEmptyString(value, what));
    } else if (key == "optimizer") {
      MEMPLAN_TRY(result.optimizer, NonEmptyString(value, what));
    } else if (key == "micro_batch") {
      MEMPLAN_TRY(result.micro_batch, PositiveInt(value, what));
    } else if (key == "accumulation") {
      MEMPLAN_TRY(result.accumulation, PositiveInt(value, what));
    } else if (key == "recompute") {
      MEMPLAN_TRY(result.recompute, NonEmptyString(value, what));
    } else if (key == "allocator") {
      MEMPLAN_TRY(result.allocator, NonEmptyString(value, what));
    } else if (key == "gpu") {
      MEMPLAN_TRY(result.gpu, NonEmptyString(value, what));
    } else {
      return MakeError(where + "unknown flag '" + key +
                       "' (known: batch, dims, precision, optimizer, micro_batch, accumulation, "
                       "recompute, allocator, gpu)");
    }
  }
  return result;
}

nlohmann::ordered_json PlanFlagsToJson(const PlanFlags& flags) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  if (flags.batch) out["batch"] = *flags.batch;
  if (!flags.dims.empty()) {
    nlohmann::ordered_json dims = nlohmann::ordered_json::object();
    for (const auto& [name, size] : flags.dims) dims[name] = size;
    out["dims"] = dims;
  }
  if (flags.precision) out["precision"] = *flags.precision;
  if (flags.optimizer) out["optimizer"] = *flags.optimizer;
  if (flags.micro_batch) out["micro_batch"] = *flags.micro_batch;
  if (flags.accumulation) out["accumulation"] = *flags.accumulation;
  if (flags.recompute) out["recompute"] = *flags.recompute;
  if (flags.allocator) out["allocator"] = *flags.allocator;
  if (flags.gpu) out["gpu"] = *flags.gpu;
  return out;
}

std::string PlanFlagsAsArguments(const PlanFlags& flags) {
  std::string out;
  auto add = [&out](const std::string& flag, const std::string& value) {
    if (!out.empty()) out += ' ';
    out += flag + " " + value;
  };
  if (flags.batch) add("--batch", std::to_string(*flags.batch));
  for (const auto& [name, size] : flags.dims) add("--dim", name + "=" + std::to_string(size));
  if (flags.precision) add("--precision", *flags.precision);
  if (flags.optimizer) add("--optimizer", *flags.optimizer);
  if (flags.micro_batch) add("--micro-batch", std::to_string(*flags.micro_batch));
  if (flags.accumulation) add("--accumulation", std::to_string(*flags.accumulation));
  if (flags.recompute) add("--recompute", *flags.recompute);
  if (flags.allocator) add("--allocator", *flags.allocator);
  if (flags.gpu) add("--gpu", *flags.gpu);
  return out;
}

}  // namespace memplan
