#include "analyzer/baseline/plan_flags.h"

#include <array>

#include "analyzer/baseline/json_file.h"

namespace memplan {
namespace {

// The flags of each JSON type, in struct order: one table drives reading, writing and the
// argument form, so a flag cannot be read but forgotten on write.
struct IntFlag {
  const char* key;
  const char* argument;
  std::optional<int64_t> PlanFlags::*member;
};
constexpr std::array<IntFlag, 3> kIntFlags = {{
    {"batch", "--batch", &PlanFlags::batch},
    {"global_batch", "--global-batch", &PlanFlags::global_batch},
    {"micro_batch", "--micro-batch", &PlanFlags::micro_batch},
}};

struct StringFlag {
  const char* key;
  const char* argument;
  std::optional<std::string> PlanFlags::*member;
};
constexpr std::array<StringFlag, 12> kStringFlags = {{
    {"batch_dim", "--batch-dim", &PlanFlags::batch_dim},
    {"gpu", "--gpu", &PlanFlags::gpu},
    {"reserve", "--reserve", &PlanFlags::reserve},
    {"precision", "--precision", &PlanFlags::precision},
    {"optimizer", "--optimizer", &PlanFlags::optimizer},
    {"loss", "--loss", &PlanFlags::loss},
    {"zero_grad", "--zero-grad", &PlanFlags::zero_grad},
    {"allocator", "--allocator", &PlanFlags::allocator},
    {"recompute", "--recompute", &PlanFlags::recompute},
    {"fp32_ops", "--fp32-ops", &PlanFlags::fp32_ops},
    {"fp16_ops", "--fp16-ops", &PlanFlags::fp16_ops},
    {"loss_scaling", "--loss-scaling", &PlanFlags::loss_scaling},
}};

constexpr const char* kKnownKeys =
    "batch, global_batch, micro_batch, dims, batch_dim, gpu, reserve, precision, optimizer, loss, "
    "zero_grad, allocator, recompute, fp32_ops, fp16_ops, loss_scaling, clip_grad";

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

// Reads `key` into `result` when it is one of the table's flags; false when it is not.
Expected<bool> ReadTableFlag(const std::string& key, const nlohmann::json& value,
                             const std::string& what, PlanFlags& result) {
  for (const IntFlag& flag : kIntFlags) {
    if (key != flag.key) continue;
    MEMPLAN_TRY(result.*flag.member, PositiveInt(value, what));
    return true;
  }
  for (const StringFlag& flag : kStringFlags) {
    if (key != flag.key) continue;
    MEMPLAN_TRY(result.*flag.member, NonEmptyString(value, what));
    return true;
  }
  return false;
}

}  // namespace

Expected<PlanFlags> PlanFlagsFromJson(const nlohmann::json& flags, const std::string& where) {
  if (!flags.is_object()) return MakeError(where + "'flags' must be an object");
  PlanFlags result;
  for (const auto& [key, value] : flags.items()) {
    std::string what = where + "flag '" + key + "'";
    MEMPLAN_TRY(bool known, ReadTableFlag(key, value, what, result));
    if (known) continue;
    if (key == "dims") {
      if (!value.is_object()) return MakeError(what + " must be an object of name: size");
      for (const auto& [name, size] : value.items()) {
        MEMPLAN_TRY(result.dims[name], PositiveInt(size, what + " '" + name + "'"));
      }
    } else if (key == "clip_grad") {
      if (!value.is_boolean()) return MakeError(what + " must be true or false");
      result.clip_grad = value.get<bool>();
    } else {
      return MakeError(where + "unknown flag '" + key + "' (known: " + kKnownKeys + ")");
    }
  }
  return result;
}

nlohmann::ordered_json PlanFlagsToJson(const PlanFlags& flags) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const IntFlag& flag : kIntFlags)
    if (flags.*flag.member) out[flag.key] = *(flags.*flag.member);
  if (!flags.dims.empty()) {
    nlohmann::ordered_json dims = nlohmann::ordered_json::object();
    for (const auto& [name, size] : flags.dims) dims[name] = size;
    out["dims"] = dims;
  }
  for (const StringFlag& flag : kStringFlags)
    if (flags.*flag.member) out[flag.key] = *(flags.*flag.member);
  if (flags.clip_grad) out["clip_grad"] = true;
  return out;
}

std::string PlanFlagsAsArguments(const PlanFlags& flags) {
  std::string out;
  auto add = [&out](const std::string& text) {
    if (!out.empty()) out += ' ';
    out += text;
  };
  for (const IntFlag& flag : kIntFlags)
    if (flags.*flag.member)
      add(std::string(flag.argument) + " " + std::to_string(*(flags.*flag.member)));
  for (const auto& [name, size] : flags.dims) add("--dim " + name + "=" + std::to_string(size));
  for (const StringFlag& flag : kStringFlags)
    if (flags.*flag.member) add(std::string(flag.argument) + " " + *(flags.*flag.member));
  if (flags.clip_grad) add("--clip-grad");
  return out;
}

}  // namespace memplan
