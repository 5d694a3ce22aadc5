// 🤗 Accelerate config YAML for `accelerate launch --config_file`. Only fields of accelerate's
// ClusterConfig are written: its loader rejects unknown keys ("had unknown keys"), and gradient
// accumulation is not a top-level field, so accumulation steps go into a comment naming the two
// places accelerate does read them (Accelerator(gradient_accumulation_steps=k) and the
// ACCELERATE_GRADIENT_ACCUMULATION_STEPS environment variable). The config has no key for the
// optimizer, clipping or recompute either, yet the plan's memory depends on all three, so the
// comment gives the script lines for them.
//
// Strings YAML 1.1 would read as booleans ('NO', 'no') are quoted, as `accelerate config` does.

#include "analyzer/config_export/export_text.h"
#include "analyzer/config_export/exporters.h"
#include "analyzer/config_export/fine_tune_text.h"
#include "analyzer/vocabulary/enum_table.h"

namespace memplan::config_export {
namespace {

// accelerate's mixed_precision for each precision; 'no' is quoted (YAML 1.1 reads it as false).
constexpr EnumTable<Precision, std::string_view, 3> kMixedPrecisionValues = {{
    {Precision::kFp32, "'no'"},
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
std::string DistributedType(const ExportPlan& plan) {
  // One GPU with an optimizer offload runs DeepSpeed's ZeRO-Offload through the plugin.
  if (!plan.data_parallel) return OffloadsOptimizer(plan.offload) ? "DEEPSPEED" : "'NO'";
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

// deepspeed_config (ZeRO stages) or fsdp_config, with the settings the per-rank program was
// derived with; empty for DDP and one GPU.
// The plugin's deepspeed_config block for ZeRO `stage`, with the plan's offload devices.
std::string DeepSpeedPluginSection(const ExportPlan& plan, int stage) {
  const bool optimizer = OffloadsOptimizer(plan.offload);
  const bool params = plan.offload == OffloadMode::kOptimizerAndParams;
  std::string out = "deepspeed_config:\n";
  out += "  gradient_accumulation_steps: " + std::to_string(plan.accumulation_steps) + "\n";
  out += std::string("  offload_optimizer_device: ") + (optimizer ? "cpu" : "none") + "\n";
  out += std::string("  offload_param_device: ") + (params ? "cpu" : "none") + "\n";
  out += "  zero3_init_flag: false\n";
  out += "  zero_stage: " + std::to_string(stage) + "\n";
  return out;
}

std::string EngineSection(const ExportPlan& plan) {
  if (!plan.data_parallel) {
    // One GPU: ZeRO-Offload is stage 2 (stage 3 with the parameters offloaded).
    if (!OffloadsOptimizer(plan.offload)) return "";
    return DeepSpeedPluginSection(plan, plan.offload == OffloadMode::kOptimizerAndParams ? 3 : 2);
  }
  const DataParallelOptions& dp = *plan.data_parallel;
  std::string out;
  switch (dp.strategy) {
    case ParallelStrategy::kDdp:
      return "";
    case ParallelStrategy::kFsdp:
    case ParallelStrategy::kHybridShard:
      out += "fsdp_config:\n";
      if (dp.fsdp_wrap_blocks) {
        // Accelerate wraps the classes in the model's _no_split_modules (every HF model's
        // decoder or encoder layer); for another model, add fsdp_transformer_layer_cls_to_wrap.
        out += "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n";
        out += "  fsdp_backward_prefetch: BACKWARD_PRE\n";
      } else {
        out += "  fsdp_auto_wrap_policy: SIZE_BASED_WRAP\n";
        out += "  fsdp_backward_prefetch: BACKWARD_PRE\n";
        out += "  fsdp_min_num_params: " + std::to_string(dp.fsdp_min_unit_parameters) + "\n";
      }
      out += std::string("  fsdp_offload_params: ") +
             (plan.offload == OffloadMode::kOptimizerAndParams ? "true" : "false") + "\n";
      out += "  fsdp_sharding_strategy: " + FsdpShardingStrategy(dp) + "\n";
      out += "  fsdp_state_dict_type: SHARDED_STATE_DICT\n";
      return out;
    case ParallelStrategy::kZero1:
    case ParallelStrategy::kZero2:
    case ParallelStrategy::kZero3: {
      const int stage = dp.strategy == ParallelStrategy::kZero1   ? 1
                        : dp.strategy == ParallelStrategy::kZero2 ? 2
                                                                  : 3;
      return DeepSpeedPluginSection(plan, stage);
    }
  }
  return out;
}

}  // namespace

std::string ExportAccelerate(const ExportPlan& plan, const ExportOptions& options) {
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
      "# (`" +
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
  const std::string engine = EngineSection(plan);
  out += "compute_environment: LOCAL_MACHINE\n";
  if (engine.rfind("deepspeed_config", 0) == 0) out += engine;  // keys in accelerate's order
  out += "distributed_type: " + DistributedType(plan) + "\n";
  // --compile: Accelerator.prepare wraps the model in torch.compile (DeepSpeed: engine.compile).
  if (plan.compile) out += "dynamo_config:\n  dynamo_backend: INDUCTOR\n";
  if (engine.rfind("fsdp_config", 0) == 0) out += engine;
  out += "machine_rank: 0\n";
  out += "mixed_precision: " + std::string(ValueOf(kMixedPrecisionValues, plan.precision)) + "\n";
  out += "num_machines: " + std::to_string(plan.Nodes()) + "\n";
  out += "num_processes: " + std::to_string(plan.Gpus()) + "\n";
  out += "use_cpu: false\n";
  return out;
}

}  // namespace memplan::config_export
