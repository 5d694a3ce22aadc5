#pragma once
// The training frameworks `memplan export` writes a configuration for. Each target turns the same
// plan (micro-batch, accumulation steps, precision, recompute modules, optimizer) into the
// settings that framework reads; docs/config_export.md shows every output.

#include <array>
#include <cstdint>
#include <string_view>

#include "graph/expected.h"

namespace memplan {

enum class ExportTarget : uint8_t {
  kDeepSpeed,      // DeepSpeed config JSON (ds_config.json)
  kHfTrainer,      // Python: transformers.TrainingArguments(...)
  kHfTrainerJson,  // JSON of TrainingArguments fields (HfArgumentParser.parse_json_file)
  kAccelerate,     // accelerate config YAML (accelerate launch --config_file)
  kLightning,      // Python: lightning Trainer(...) arguments
  kPytorchLoop,    // Python: a plain PyTorch training loop
};

inline constexpr std::array<ExportTarget, 6> kAllExportTargets = {
    ExportTarget::kDeepSpeed,  ExportTarget::kHfTrainer, ExportTarget::kHfTrainerJson,
    ExportTarget::kAccelerate, ExportTarget::kLightning, ExportTarget::kPytorchLoop};

// The CLI spelling: "deepspeed", "hf-trainer", "hf-trainer-json", "accelerate", "lightning",
// "pytorch".
std::string_view ExportTargetName(ExportTarget target);

// Inverse of ExportTargetName; the error lists the accepted names.
Expected<ExportTarget> ParseExportTarget(std::string_view name);

// The file name a user would save the output as ("ds_config.json", "train_loop.py", ...), for
// help texts and docs.
std::string_view ExportTargetDefaultFileName(ExportTarget target);

}  // namespace memplan
