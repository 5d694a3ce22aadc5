#pragma once
// The `memplan analyze` flags a CI configuration pins, as written in a config list or a baseline
// file. An absent flag means "the analyzer's default / let the planner choose", and stays absent
// when the baseline is written back, so a baseline never pins more than its author did.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>
#include "graph/expected.h"

namespace memplan {

struct PlanFlags {
  std::optional<int64_t> batch;          // --batch: target global batch (samples per step)
  std::map<std::string, int64_t> dims;   // --dim name=value: other symbolic dims (seq, ...)
  std::optional<std::string> precision;  // --precision: fp32 | fp16 | bf16 | auto
  std::optional<std::string> optimizer;  // --optimizer: sgd | sgd-momentum | adam | adamw
  std::optional<int64_t> micro_batch;    // --micro-batch: pin the micro-batch
  std::optional<int64_t> accumulation;   // --accumulation: pin the accumulation steps
  std::optional<std::string> recompute;  // --recompute: none | sqrt | optimal | all | auto
  std::optional<std::string> allocator;  // --allocator: caching | exact
  std::optional<std::string> gpu;        // --gpu: a known GPU name or a size ("24G")

  bool operator==(const PlanFlags&) const = default;
};

// Reads a "flags" object. Unknown keys are errors (a typo such as "micro-batch" would otherwise
// silently change what CI checks); integers must be >= 1. `where` prefixes messages
// ("configuration 'resnet-b32': ").
Expected<PlanFlags> PlanFlagsFromJson(const nlohmann::json& flags, const std::string& where);

// Writes only the flags that are set, in the order of the struct.
nlohmann::ordered_json PlanFlagsToJson(const PlanFlags& flags);

// The flags as `memplan analyze` arguments, for messages and docs:
// "--batch 32 --dim seq=128 --precision fp16".
std::string PlanFlagsAsArguments(const PlanFlags& flags);

}  // namespace memplan
