// 🤗 Accelerate config YAML for `accelerate launch --config_file`. Only fields of accelerate's
// ClusterConfig are written: its loader rejects unknown keys ("had unknown keys"), and gradient
// accumulation is not a top-level field, so accumulation steps go into a comment naming the two
// places accelerate does read them (Accelerator(gradient_accumulation_steps=k) and the
// ACCELERATE_GRADIENT_ACCUMULATION_STEPS environment variable). The config has no key for the
// optimizer, clipping or recompute either, yet the plan's memory depends on all three, so the
// comment gives the script lines for them.
//
// The comments are text; the document is written by yaml-cpp. Strings YAML 1.1 would read as
// booleans ('NO', 'no') are single-quoted, as `accelerate config` writes them (yaml-cpp, a YAML
// 1.2 emitter, would leave them plain).

#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

#include "analyzer/config_export/export_text.h"
#include "analyzer/config_export/exporters.h"
#include "analyzer/config_export/fine_tune_text.h"
#include "analyzer/vocabulary/enum_table.h"

namespace memplan::config_export {
namespace {

// accelerate's mixed_precision for each precision ('no' is quoted where it is written).
constexpr EnumTable<Precision, std::string_view, 3> kMixedPrecisionValues = {{
    {Precision::kFp32, "no"},
    {Precision::kFp16, "fp16"},
    {Precision::kBf16, "bf16"},
}};
static_assert(ListsEvery(kMixedPrecisionValues, kPrecisionNames));

// Python lines as an indented comment: "x = 1\n" -> "#   x = 1\n".
std::string IndentedComment(const std::string& lines) {
  std::string out;
  size_t start = 0;
  while (start < lines.size()) {
    size_t end = lines.find('\n', start);
    if (end == std::string::npos) end = lines.size();
    out += "#   " + lines.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

// accelerate's distributed_type for a data-parallel strategy.
std::string DistributedType(const PlanReport& plan) {
  // One GPU with an optimizer offload runs DeepSpeed's ZeRO-Offload through the plugin.
  if (!plan.data_parallel) return OffloadsOptimizer(plan.offload) ? "DEEPSPEED" : "NO";
  switch (plan.data_parallel->strategy) {
    case ParallelStrategy::kDdp:
      return "MULTI_GPU";
    case ParallelStrategy::kFsdp:
    case ParallelStrategy::kHybridShard:
      return "FSDP";
    default:
      return "DEEPSPEED";
  }
}

// A string YAML 1.1 (accelerate's PyYAML) would read as a boolean is single-quoted.
void WriteString(YAML::Emitter& out, const std::string& value) {
  if (value == "no" || value == "NO")
    out << YAML::SingleQuoted << value;
  else
    out << value;
}

// The plugin's deepspeed_config block for ZeRO `stage`, with the plan's offload devices.
void DeepSpeedPluginSection(YAML::Emitter& out, const PlanReport& plan, int stage) {
  const bool optimizer = OffloadsOptimizer(plan.offload);
  const bool params = plan.offload == OffloadMode::kOptimizerAndParams;
  out << YAML::Key << "deepspeed_config" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "gradient_accumulation_steps" << YAML::Value << plan.accumulation_steps;
  out << YAML::Key << "offload_optimizer_device" << YAML::Value << (optimizer ? "cpu" : "none");
  out << YAML::Key << "offload_param_device" << YAML::Value << (params ? "cpu" : "none");
  out << YAML::Key << "zero3_init_flag" << YAML::Value << false;
  out << YAML::Key << "zero_stage" << YAML::Value << stage;
  out << YAML::EndMap;
}

// The ZeRO stage the plan runs through accelerate's DeepSpeed plugin, or nullopt when it runs
// without DeepSpeed (one GPU without offload, DDP, FSDP). One GPU with an optimizer offload is
// ZeRO-Offload: stage 2 (stage 3 with the parameters offloaded).
std::optional<int> DeepSpeedStage(const PlanReport& plan) {
  if (!plan.data_parallel) {
    if (!OffloadsOptimizer(plan.offload)) return std::nullopt;
    return plan.offload == OffloadMode::kOptimizerAndParams ? 3 : 2;
  }
  switch (plan.data_parallel->strategy) {
    case ParallelStrategy::kZero1:
      return 1;
    case ParallelStrategy::kZero2:
      return 2;
    case ParallelStrategy::kZero3:
      return 3;
    default:
      return std::nullopt;
  }
}

bool UsesFsdp(const PlanReport& plan) {
  return plan.data_parallel && (plan.data_parallel->strategy == ParallelStrategy::kFsdp ||
                                plan.data_parallel->strategy == ParallelStrategy::kHybridShard);
}

// fsdp_config, with the settings the per-rank program was derived with.
void FsdpSection(YAML::Emitter& out, const PlanReport& plan) {
  const DataParallelOptions& dp = *plan.data_parallel;
  out << YAML::Key << "fsdp_config" << YAML::Value << YAML::BeginMap;
  if (dp.fsdp_wrap_blocks) {
    // Accelerate wraps the classes in the model's _no_split_modules (every HF model's
    // decoder or encoder layer); for another model, add fsdp_transformer_layer_cls_to_wrap.
    out << YAML::Key << "fsdp_auto_wrap_policy" << YAML::Value << "TRANSFORMER_BASED_WRAP";
    out << YAML::Key << "fsdp_backward_prefetch" << YAML::Value << "BACKWARD_PRE";
  } else {
    out << YAML::Key << "fsdp_auto_wrap_policy" << YAML::Value << "SIZE_BASED_WRAP";
    out << YAML::Key << "fsdp_backward_prefetch" << YAML::Value << "BACKWARD_PRE";
    out << YAML::Key << "fsdp_min_num_params" << YAML::Value << dp.fsdp_min_unit_parameters;
  }
  out << YAML::Key << "fsdp_offload_params" << YAML::Value
      << (plan.offload == OffloadMode::kOptimizerAndParams);
  out << YAML::Key << "fsdp_sharding_strategy" << YAML::Value << FsdpShardingStrategy(dp);
  out << YAML::Key << "fsdp_state_dict_type" << YAML::Value << "SHARDED_STATE_DICT";
  out << YAML::EndMap;
}

}  // namespace

std::string ExportAccelerate(const PlanReport& plan, const ExportOptions& options) {
  std::string k = std::to_string(plan.accumulation_steps);
  std::string out = "# " + ProvenanceSentence(plan, options) + "\n";
  out += "# Micro-batch: DataLoader(dataset, batch_size=" + std::to_string(plan.micro_batch) +
         ") in the training script.\n";
  out +=
      "# Accumulation (" + k + " micro-batches per optimizer step) is not a config-file key for\n";
  out += "# a single GPU: use Accelerator(gradient_accumulation_steps=" + k +
         ") with `with accelerator.accumulate(model):`,\n";
  out += "# or export ACCELERATE_GRADIENT_ACCUMULATION_STEPS=" + k + ".\n";
  out += "# The optimizer the plan simulated, for the training script:\n";
  out += IndentedComment(HyperParameterConstants(plan, options));
  // The lines run as pasted: bitsandbytes' optimizer needs its import (a NameError without).
  if (BitsAndBytesOptimizer(plan.optimizer)) out += "#   import bitsandbytes\n";
  out +=
      "#   optimizer = " +
      TorchOptimizerCall(plan, options,
                         HasFineTuning(plan) ? "[p for p in model.parameters() if p.requires_grad]"
                                             : "model.parameters()") +
      "\n";
  if (HasFineTuning(plan)) {
    out +=
        "# " + CommentSafe(FineTuneScriptSentence(plan, ExportCommand(options, "pytorch"))) + "\n";
  }
  if (options.max_grad_norm > 0) {
    out += "# Clipping, as planned: after accelerator.backward(loss), inside accumulate():\n";
    out += "#   if accelerator.sync_gradients:\n";
    out += "#       accelerator.clip_grad_norm_(model.parameters(), " +
           PythonFloat(options.max_grad_norm) + ")\n";
  } else {
    out += "# No gradient clipping: the plan was simulated without it.\n";
  }
  out += RecomputeModuleComment(
      plan,
      "Recompute is not a config key: wrap these modules in torch.utils.checkpoint.checkpoint\n"
      "# " +
          std::string(plan.recompute_reentrant ? "with use_reentrant=True " : "") + "(`" +
          ExportCommand(options, "pytorch") + "` writes enable_recompute(model)):");
  if (plan.offload == OffloadMode::kActivations) {
    out += "# Saved activations live in pinned host memory, as planned; not a config key: in the\n";
    out += "# training script, run forward and loss under save_on_cpu:\n";
    out += "#   with torch.autograd.graph.save_on_cpu(pin_memory=True):\n";
    out += "#       loss = loss_fn(model(inputs), targets)\n";
  }
  if (plan.data_parallel) {
    out += "# Launch: accelerate launch --config_file accelerate.yaml train.py (on each of the " +
           std::to_string(plan.Nodes()) + " machines, with its machine_rank).\n";
  }
  // The document, keys in the order `accelerate config` writes them.
  YAML::Emitter doc;
  doc << YAML::BeginMap;
  doc << YAML::Key << "compute_environment" << YAML::Value << "LOCAL_MACHINE";
  const std::optional<int> zero_stage = DeepSpeedStage(plan);
  if (zero_stage) DeepSpeedPluginSection(doc, plan, *zero_stage);
  doc << YAML::Key << "distributed_type" << YAML::Value;
  WriteString(doc, DistributedType(plan));
  // --compile: Accelerator.prepare wraps the model in torch.compile (DeepSpeed: engine.compile).
  if (plan.compile) {
    doc << YAML::Key << "dynamo_config" << YAML::Value << YAML::BeginMap;
    doc << YAML::Key << "dynamo_backend" << YAML::Value << "INDUCTOR";
    doc << YAML::EndMap;
  }
  if (UsesFsdp(plan)) FsdpSection(doc, plan);
  doc << YAML::Key << "machine_rank" << YAML::Value << 0;
  doc << YAML::Key << "mixed_precision" << YAML::Value;
  WriteString(doc, std::string(ValueOf(kMixedPrecisionValues, plan.precision)));
  doc << YAML::Key << "num_machines" << YAML::Value << plan.Nodes();
  doc << YAML::Key << "num_processes" << YAML::Value << plan.Gpus();
  doc << YAML::Key << "use_cpu" << YAML::Value << false;
  doc << YAML::EndMap;
  return out + doc.c_str() + "\n";
}

}  // namespace memplan::config_export
