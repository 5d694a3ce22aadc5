#pragma once
// The `memplan analyze` plan flags a CI configuration pins, as written in a config list or a
// baseline file. Keys are the long flag names with '_' for '-' and mean exactly what the flag
// means on the command line (tools/memplan/plan_flags.h); docs/ci_checks.md lists them. An absent
// flag means "the analyzer's default / let the planner choose", and stays absent when the
// baseline is written back, so a baseline never pins more than its author did.
//
// Values are validated here only for their JSON type (integers >= 1, non-empty strings, a
// boolean); their meaning (a known precision, a GPU name) is checked by the CLI, which resolves
// them exactly as it resolves typed flags.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>
#include "graph/expected.h"

namespace memplan {

struct PlanFlags {
  std::optional<int64_t> batch;          // --batch: the micro-batch (binds the batch symbol)
  std::optional<int64_t> global_batch;   // --global-batch: samples per optimizer step
  std::optional<int64_t> micro_batch;    // --micro-batch: same as --batch
  std::map<std::string, int64_t> dims;   // --dim name=value: other symbolic dims (seq, ...)
  std::optional<std::string> batch_dim;  // --batch-dim: the symbol that is the batch
  std::optional<std::string> gpu;        // --gpu: a known GPU name or a size ("24G")
  std::optional<std::string> reserve;    // --reserve: memory kept free ("1G")
  std::optional<std::string> precision;  // --precision: fp32 | fp16 | bf16 | auto
  std::optional<std::string> optimizer;  // --optimizer: sgd | momentum | adam | adamw | adafactor
  std::optional<std::string> loss;       // --loss: auto | cross_entropy | mse | sum
  std::optional<std::string> zero_grad;  // --zero-grad: set_to_none | zero
  std::optional<std::string> allocator;  // --allocator: caching | exact
  std::optional<std::string> recompute;  // --recompute: none | all | sqrt | optimal | auto
  std::optional<std::string> fp32_ops;   // --fp32-ops: comma list of op types / node names
  std::optional<std::string> fp16_ops;   // --fp16-ops: comma list of op types / node names
  std::optional<std::string> loss_scaling;  // --loss-scaling: none | dynamic | static:<scale>
  bool clip_grad = false;                   // --clip-grad

  bool operator==(const PlanFlags&) const = default;
};

// Reads a "flags" object. Unknown keys are errors (a typo such as "micro-batch" would otherwise
// silently change what CI checks); integers must be >= 1. `where` prefixes messages
// ("configuration 'resnet-b32': ").
Expected<PlanFlags> PlanFlagsFromJson(const nlohmann::json& flags, const std::string& where);

// Writes only the flags that are set (clip_grad only when true), in the order of the struct.
nlohmann::ordered_json PlanFlagsToJson(const PlanFlags& flags);

// The flags as `memplan analyze` arguments, for messages and docs:
// "--batch 32 --dim seq=128 --precision fp16".
std::string PlanFlagsAsArguments(const PlanFlags& flags);

}  // namespace memplan
