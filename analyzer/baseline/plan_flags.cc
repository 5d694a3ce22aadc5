#include "analyzer/baseline/plan_flags.h"

#include "analyzer/baseline/json_file.h"

namespace memplan {

// Help texts are the CLI's; they live here so a flag is declared in one place.
const std::array<PlanFlagSpec, 17> kPlanFlagTable = {{
    {.key = "batch",
     .argument = "--batch",
     .type = PlanFlagType::kPositiveInt,
     .analysis_flag = true,
     .integer = &PlanFlags::batch},
    {.key = "global_batch",
     .argument = "--global-batch",
     .type = PlanFlagType::kPositiveInt,
     .help = "target batch per optimizer step (micro-batch x accumulation steps); default: the "
             "largest micro-batch that fits, without accumulation",
     .help_position = 1,
     .integer = &PlanFlags::global_batch},
    {.key = "micro_batch",
     .argument = "--micro-batch",
     .type = PlanFlagType::kPositiveInt,
     .help = "fix the micro-batch instead of searching (what-if); same as --batch",
     .help_position = 2,
     .integer = &PlanFlags::micro_batch},
    {.key = "dims", .argument = "--dim", .type = PlanFlagType::kDims, .analysis_flag = true},
    {.key = "batch_dim",
     .argument = "--batch-dim",
     .type = PlanFlagType::kText,
     .analysis_flag = true,
     .text = &PlanFlags::batch_dim},
    {.key = "gpu",
     .argument = "--gpu",
     .type = PlanFlagType::kText,
     .help = "the GPU: a memory size (24G = 24 GiB, 80GB = 80e9 bytes) or a name (A100-80GB, "
             "H100, RTX3090, ...)",
     .help_position = 0,
     .text = &PlanFlags::gpu},
    {.key = "reserve",
     .argument = "--reserve",
     .type = PlanFlagType::kText,
     .help = "memory to keep free on the GPU, e.g. 1G",
     .help_position = 3,
     .text = &PlanFlags::reserve},
    {.key = "precision",
     .argument = "--precision",
     .type = PlanFlagType::kText,
     .cli_default = "auto",
     .help_shows_default = true,
     .help = "fp32 | fp16 | bf16 (mixed precision, placed per node) | auto (fp32 and the GPU's "
             "fastest 16-bit format, whichever plans faster)",
     .help_position = 4,
     .text = &PlanFlags::precision},
    {.key = "optimizer",
     .argument = "--optimizer",
     .type = PlanFlagType::kText,
     .cli_default = "adam",
     .help = "sgd | momentum | adam | adamw | adafactor",
     .help_position = 5,
     .text = &PlanFlags::optimizer},
    {.key = "loss",
     .argument = "--loss",
     .type = PlanFlagType::kText,
     .cli_default = "auto",
     .help = "auto | cross_entropy | mse | sum",
     .help_position = 6,
     .text = &PlanFlags::loss},
    {.key = "zero_grad",
     .argument = "--zero-grad",
     .type = PlanFlagType::kText,
     .cli_default = "set_to_none",
     .help = "set_to_none | zero",
     .help_position = 7,
     .text = &PlanFlags::zero_grad},
    {.key = "allocator",
     .argument = "--allocator",
     .type = PlanFlagType::kText,
     .cli_default = "caching",
     .help = "caching (PyTorch's CUDA caching allocator) | exact (live bytes)",
     .help_position = 8,
     .text = &PlanFlags::allocator},
    {.key = "recompute",
     .argument = "--recompute",
     .type = PlanFlagType::kText,
     .cli_default = "auto",
     .help_shows_default = true,
     .help = "none | all | sqrt | optimal | auto (optimal when the budget or the global batch "
             "needs it, none otherwise)",
     .help_position = 9,
     .text = &PlanFlags::recompute},
    {.key = "fp32_ops",
     .argument = "--fp32-ops",
     .type = PlanFlagType::kText,
     .help = "comma list of op types or node names forced to fp32 in mixed precision",
     .help_position = 10,
     .text = &PlanFlags::fp32_ops},
    {.key = "fp16_ops",
     .argument = "--fp16-ops",
     .type = PlanFlagType::kText,
     .help = "comma list of op types or node names forced to fp16/bf16",
     .help_position = 11,
     .text = &PlanFlags::fp16_ops},
    {.key = "loss_scaling",
     .argument = "--loss-scaling",
     .type = PlanFlagType::kText,
     .help = "none | dynamic | static:<scale> (or a bare scale such as 1024); default: dynamic "
             "for fp16, none for bf16",
     .help_position = 12,
     .text = &PlanFlags::loss_scaling},
    {.key = "clip_grad",
     .argument = "--clip-grad",
     .type = PlanFlagType::kSwitch,
     .help = "plan for gradient-norm clipping",
     .help_position = 13},
}};

const PlanFlagSpec& PlanFlagWithKey(std::string_view key) {
  for (const PlanFlagSpec& spec : kPlanFlagTable)
    if (spec.key == key) return spec;
  MEMPLAN_CHECK(false && "no plan flag with this key");
  return kPlanFlagTable[0];
}

namespace {

std::string KnownKeys() {
  std::string keys;
  for (const PlanFlagSpec& spec : kPlanFlagTable) {
    if (!keys.empty()) keys += ", ";
    keys += spec.key;
  }
  return keys;
}

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

Status ReadFlag(const PlanFlagSpec& spec, const nlohmann::json& value, const std::string& what,
                PlanFlags& result) {
  switch (spec.type) {
    case PlanFlagType::kPositiveInt: {
      MEMPLAN_TRY(result.*spec.integer, PositiveInt(value, what));
      break;
    }
    case PlanFlagType::kText: {
      MEMPLAN_TRY(result.*spec.text, NonEmptyString(value, what));
      break;
    }
    case PlanFlagType::kDims:
      if (!value.is_object()) return MakeError(what + " must be an object of name: size");
      for (const auto& [name, size] : value.items()) {
        MEMPLAN_TRY(result.dims[name], PositiveInt(size, what + " '" + name + "'"));
      }
      break;
    case PlanFlagType::kSwitch:
      if (!value.is_boolean()) return MakeError(what + " must be true or false");
      result.clip_grad = value.get<bool>();
      break;
  }
  return OkStatus();
}

}  // namespace

Expected<PlanFlags> PlanFlagsFromJson(const nlohmann::json& flags, const std::string& where) {
  if (!flags.is_object()) return MakeError(where + "'flags' must be an object");
  PlanFlags result;
  for (const auto& [key, value] : flags.items()) {
    const PlanFlagSpec* spec = nullptr;
    for (const PlanFlagSpec& s : kPlanFlagTable)
      if (s.key == key) spec = &s;
    if (spec == nullptr)
      return MakeError(where + "unknown flag '" + key + "' (known: " + KnownKeys() + ")");
    MEMPLAN_RETURN_IF_ERROR(ReadFlag(*spec, value, where + "flag '" + key + "'", result));
  }
  return result;
}

nlohmann::ordered_json PlanFlagsToJson(const PlanFlags& flags) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const PlanFlagSpec& spec : kPlanFlagTable) {
    const std::string key(spec.key);
    switch (spec.type) {
      case PlanFlagType::kPositiveInt:
        if (flags.*spec.integer) out[key] = *(flags.*spec.integer);
        break;
      case PlanFlagType::kText:
        if (flags.*spec.text) out[key] = *(flags.*spec.text);
        break;
      case PlanFlagType::kDims:
        if (!flags.dims.empty()) {
          nlohmann::ordered_json dims = nlohmann::ordered_json::object();
          for (const auto& [name, size] : flags.dims) dims[name] = size;
          out[key] = dims;
        }
        break;
      case PlanFlagType::kSwitch:
        if (flags.clip_grad) out[key] = true;
        break;
    }
  }
  return out;
}

std::string PlanFlagsAsArguments(const PlanFlags& flags) {
  std::string out;
  auto add = [&out](std::string_view argument, const std::string& value) {
    if (!out.empty()) out += ' ';
    out += argument;
    if (!value.empty()) out += " " + value;
  };
  for (const PlanFlagSpec& spec : kPlanFlagTable) {
    switch (spec.type) {
      case PlanFlagType::kPositiveInt:
        if (flags.*spec.integer) add(spec.argument, std::to_string(*(flags.*spec.integer)));
        break;
      case PlanFlagType::kText:
        if (flags.*spec.text) add(spec.argument, *(flags.*spec.text));
        break;
      case PlanFlagType::kDims:
        for (const auto& [name, size] : flags.dims)
          add(spec.argument, name + "=" + std::to_string(size));
        break;
      case PlanFlagType::kSwitch:
        if (flags.clip_grad) add(spec.argument, "");
        break;
    }
  }
  return out;
}

}  // namespace memplan
