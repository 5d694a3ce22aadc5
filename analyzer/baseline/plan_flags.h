#pragma once
// The plan flags: what a planning verb (`memplan analyze`, verify, baseline, check, report,
// profile) is asked, as the one declarative table every place that lists them reads: the CLI
// (tools/memplan/plan_flags.h binds one option per entry), CI configurations and baselines (their
// "flags" object, docs/ci_checks.md) and the argument form messages and docs print.
//
// Keys are the long flag names with '_' for '-' and mean exactly what the flag means on the
// command line. An absent flag means "the analyzer's default / let the planner choose", and stays
// absent when a baseline is written back, so a baseline never pins more than its author did.
//
// Values are validated here only for their JSON type (integers >= 1, non-empty strings, a
// boolean); their meaning (a known precision, a GPU name) is checked by the CLI, which resolves
// them exactly as it resolves typed flags.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>
#include "graph/expected.h"

namespace memplan {

struct PlanFlags {
  std::optional<int64_t> batch;            // --batch: the micro-batch (binds the batch symbol)
  std::optional<int64_t> global_batch;     // --global-batch: samples per optimizer step
  std::optional<int64_t> micro_batch;      // --micro-batch: same as --batch
  std::map<std::string, int64_t> dims;     // --dim name=value: other symbolic dims (seq, ...)
  std::optional<std::string> batch_dim;    // --batch-dim: the symbol that is the batch
  std::optional<std::string> gpu;          // --gpu: a known GPU name or a size ("24G")
  std::optional<std::string> reserve;      // --reserve: memory kept free ("1G")
  std::optional<std::string> precision;    // --precision: fp32 | fp16 | bf16 | auto
  std::optional<std::string> optimizer;    // --optimizer: sgd | momentum | adam | adamw | adafactor
  std::optional<std::string> loss;         // --loss: auto | cross_entropy | mse | sum
  std::optional<std::string> loss_output;  // --loss-output: the value the loss reads
  std::optional<std::string> zero_grad;    // --zero-grad: set_to_none | zero
  std::optional<std::string> allocator;    // --allocator: caching | exact
  // issue 41: PYTORCH_CUDA_ALLOC_CONF the plan runs under (analyzer/simulation/allocator_config.h)
  std::optional<std::string> alloc_conf;      // --alloc-conf: "expandable_segments:True,..."
  std::optional<std::string> recompute;       // --recompute: none | all | sqrt | optimal | auto
  std::optional<std::string> recompute_unit;  // --recompute-unit: auto | node | module
  std::optional<std::string> optimizer_impl;  // --optimizer-impl: foreach | fused | for-loop
  std::optional<std::string> fp32_ops;        // --fp32-ops: comma list of op types / node names
  std::optional<std::string> fp16_ops;        // --fp16-ops: comma list of op types / node names
  std::optional<std::string> loss_scaling;    // --loss-scaling: none | dynamic | static:<scale>
  bool clip_grad = false;                     // --clip-grad
  // issue 10 (amp): the mixed-precision regime and the headroom below the budget.
  std::optional<std::string> amp_mode;  // --amp-mode: autocast | master-weights | pure
  std::optional<std::string> headroom;  // --headroom: 5% of the budget, or a size ("1G")
  std::optional<std::string> knee;      // --knee: 2% (the throughput knee), 0 for the largest
  // Data parallelism (docs/multi_gpu.md).
  std::optional<int64_t> gpus;          // --gpus: data-parallel ranks
  std::optional<std::string> parallel;  // --parallel: ddp | zero1 | zero2 | zero3 | fsdp | auto
  std::optional<int64_t> nodes;         // --nodes: machines the ranks span
  // --engine-options: engine settings of a data-parallel plan (analyzer/parallel/engine_options.h)
  std::optional<std::string> engine_options;
  std::optional<int64_t> tp;             // --tp: tensor-parallel ranks per replica (of --gpus)
  std::optional<std::string> attention;  // --attention: eager | sdpa | auto
  bool fused_loss = false;               // --fused-loss: LM head + cross entropy fused (Liger)
  // Recipes (issue 40, docs/finetuning.md "Loss and optimizer recipes").
  std::optional<std::string> loss_dtype;    // --loss-dtype: auto | fp32 | bf16 | fp16
  std::optional<int64_t> loss_chunks;       // --loss-chunks: torchtune's chunked cross entropy
  bool optimizer_in_backward = false;       // --optimizer-in-backward: torchtune's optimizer_in_bwd
  bool compile = false;                     // --compile: torch.compile's min-cut saved set
  bool recompute_reentrant = false;         // --recompute-reentrant: checkpoint(use_reentrant=True)
  std::optional<std::string> cuda_context;  // --cuda-context: lazy | eager | a size ("1.3G")
  // Host memory (docs/finetuning.md, --offload).
  std::optional<std::string>
      offload;  // --offload: none | optimizer | optimizer+params | activations
  std::optional<std::string> offload_hooks;  // --offload-hooks: save-on-cpu | torchtune[-streams]
  // Fine-tuning (docs/finetuning.md).
  std::optional<std::string> train;         // --train: regex of the parameters that train
  std::optional<std::string> freeze;        // --freeze: regex of the parameters frozen
  std::optional<int64_t> lora;              // --lora: LoRA rank
  std::optional<std::string> lora_targets;  // --lora-targets: regex of the adapted weights
  std::optional<std::string> base_dtype;    // --base-dtype: fp32 | bf16 | fp16 | int8 | nf4
  // Import (graph/fusion/fusion_table.h).
  std::optional<std::string> fusions;  // --fusions: ops | all | none

  bool operator==(const PlanFlags&) const = default;
};

enum class PlanFlagType : uint8_t {
  kPositiveInt,  // an integer >= 1 (PlanFlagSpec::integer)
  kText,         // a non-empty string (PlanFlagSpec::text)
  kDims,         // name=value pairs (PlanFlags::dims), repeatable on the command line
  kSwitch,       // present or not (PlanFlagSpec::flag: clip_grad, fused_loss, ...)
};

// One plan flag: its names, its type, where PlanFlags keeps it and how the CLI presents it.
struct PlanFlagSpec {
  std::string_view key;       // in a configuration's "flags" object: "global_batch"
  std::string_view argument;  // on the command line: "--global-batch"
  PlanFlagType type;
  // The CLI's value when the flag is not given; empty for "not given" (the planner chooses).
  std::string_view cli_default;
  // Taken by every analysis verb, `inspect` too: the CLI binds it with the model
  // (tools/memplan/cli_common.h), and its help text lives there.
  bool analysis_flag = false;
  bool help_shows_default = false;  // --help prints the default after the text
  std::string_view help;            // --help text (plan-only flags)
  int help_position = 0;            // where --help lists it among the plan-only flags (from 0)
  std::optional<int64_t> PlanFlags::*integer = nullptr;   // kPositiveInt
  std::optional<std::string> PlanFlags::*text = nullptr;  // kText
  bool PlanFlags::*flag = nullptr;                        // kSwitch
};

// Every plan flag, in the order configurations write them and messages list them.
extern const std::array<PlanFlagSpec, 45> kPlanFlagTable;

// The table entry with `key`. REQUIRES: `key` is one of the table's keys.
const PlanFlagSpec& PlanFlagWithKey(std::string_view key);

// Reads a "flags" object. Unknown keys are errors (a typo such as "micro-batch" would otherwise
// silently change what CI checks); integers must be >= 1. `where` prefixes messages
// ("configuration 'resnet-b32': ").
Expected<PlanFlags> PlanFlagsFromJson(const nlohmann::json& flags, const std::string& where);

// Writes only the flags that are set (a switch only when true), in table order.
nlohmann::ordered_json PlanFlagsToJson(const PlanFlags& flags);

// The flags as `memplan analyze` arguments, for messages and docs:
// "--batch 32 --dim seq=128 --precision fp16".
std::string PlanFlagsAsArguments(const PlanFlags& flags);

}  // namespace memplan
