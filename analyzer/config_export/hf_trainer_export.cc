// Hugging Face transformers.TrainingArguments, as a Python snippet and as the JSON object
// HfArgumentParser(TrainingArguments).parse_json_file reads.
//
// On N ranks Trainer reads the launcher's world size (torchrun / deepspeed), so the batch fields
// stay per device; the strategy is `fsdp` + `fsdp_config` for FSDP, `deepspeed` (the path of the
// DeepSpeed config `memplan export --to deepspeed` writes) for a ZeRO stage, nothing for DDP.

#include <optional>
#include <utility>
#include <vector>

#include "analyzer/config_export/export_text.h"
#include "analyzer/config_export/exporters.h"
#include "analyzer/config_export/fine_tune_text.h"
#include "analyzer/vocabulary/enum_table.h"

namespace memplan::config_export {
namespace {

// One TrainingArguments field: its name and its value already written as a Python literal and as
// JSON (the two differ only for booleans and strings).
struct Field {
  std::string name;
  std::string python;
  nlohmann::ordered_json json;
};

std::string PythonBool(bool value) { return value ? "True" : "False"; }

// Where Trainer's deepspeed= argument points: the DeepSpeed export's usual file name.
std::string DeepSpeedConfigFile() {
  return std::string(ExportTargetDefaultFileName(ExportTarget::kDeepSpeed));
}

// Trainer optimizer names: "adamw_torch" is torch.optim.AdamW (with weight_decay 0 it is exactly
// Adam) with torch's default implementation (foreach on CUDA), "adamw_torch_fused" the same with
// fused=True (what a plan with --optimizer-impl fused modelled); "sgd" is torch.optim.SGD without
// momentum. A for-loop plan is refused before this (export_config.cc).
constexpr EnumTable<OptimizerKind, std::string_view, 8> kHfOptimNames = {{
    {OptimizerKind::kSgd, "sgd"},
    {OptimizerKind::kMomentum, "sgd"},
    {OptimizerKind::kAdam, "adamw_torch"},
    {OptimizerKind::kAdamW, "adamw_torch"},
    {OptimizerKind::kAdafactor, "adafactor"},  // transformers' own Adafactor
    {OptimizerKind::kAdamW8bit, "adamw_bnb_8bit"},
    {OptimizerKind::kPagedAdamW8bit, "paged_adamw_8bit"},
    {OptimizerKind::kLion, "lion_32bit"},
}};
static_assert(ListsEvery(kHfOptimNames, kOptimizerKindNames));

std::string HfOptimName(OptimizerKind optimizer, std::optional<OptimizerImpl> impl) {
  if ((optimizer == OptimizerKind::kAdam || optimizer == OptimizerKind::kAdamW) &&
      impl == OptimizerImpl::kFused)
    return "adamw_torch_fused";
  return std::string(ValueOf(kHfOptimNames, optimizer));
}

// --fused-loss and --fusions liger: Liger Kernel, exactly the kernels the plan modelled
// (transformers >= 4.45 with liger-kernel installed). use_liger_kernel alone patches
// apply_liger_kernel_to_<model>'s defaults: rope, rms_norm, the gated MLP (swiglu for Llama-style
// models, geglu for Gemma's) and the fused linear cross entropy; a plan with only some of them
// names them in liger_kernel_config (transformers >= 4.52), so the run keeps what the plan kept.
// Liger's _apply_liger_kernel_to_instance passes each model's apply function only the keys its
// signature has, so swiglu and geglu are both written.
void AddLigerKernelFields(const PlanReport& plan, std::vector<Field>& fields) {
  const bool liger_kernels = plan.fusions == FusionSet::kLiger;
  if (!plan.fused_loss && !liger_kernels) return;
  fields.push_back(Field{"use_liger_kernel", PythonBool(true), true});
  if (plan.fused_loss == liger_kernels) return;
  const nlohmann::ordered_json config = {
      {"rope", liger_kernels},   {"rms_norm", liger_kernels},
      {"swiglu", liger_kernels}, {"geglu", liger_kernels},
      {"cross_entropy", false},  {"fused_linear_cross_entropy", plan.fused_loss}};
  std::string text = "{";
  for (const auto& [key, value] : config.items())
    text += std::string(text.size() > 1 ? ", " : "") + "\"" + key +
            "\": " + PythonBool(value.get<bool>());
  fields.push_back(Field{"liger_kernel_config", text + "}", config});
}

std::vector<Field> TrainingArgumentFields(const PlanReport& plan, const ExportOptions& options) {
  std::vector<Field> fields;
  auto add_int = [&](std::string name, int64_t v) {
    fields.push_back(Field{std::move(name), std::to_string(v), v});
  };
  auto add_float = [&](std::string name, double v) {
    fields.push_back(Field{std::move(name), PythonFloat(v), v});
  };
  auto add_bool = [&](std::string name, bool v) {
    fields.push_back(Field{std::move(name), PythonBool(v), v});
  };
  auto add_string = [&](std::string name, const std::string& v) {
    fields.push_back(Field{std::move(name), PythonString(v), v});
  };
  add_string("output_dir", options.hf_output_dir);
  add_int("per_device_train_batch_size", plan.micro_batch);
  add_int("gradient_accumulation_steps", plan.accumulation_steps);
  add_bool("fp16", plan.precision == Precision::kFp16);
  add_bool("bf16", plan.precision == Precision::kBf16);
  add_bool("gradient_checkpointing", plan.UsesRecompute());
  // Which torch.utils.checkpoint the plan modelled: transformers' default changed (True before
  // 4.4x, False now), so it is always written.
  if (plan.UsesRecompute()) {
    const nlohmann::ordered_json kwargs = {{"use_reentrant", plan.recompute_reentrant}};
    fields.push_back(Field{
        "gradient_checkpointing_kwargs",
        std::string("{\"use_reentrant\": ") + PythonBool(plan.recompute_reentrant) + "}", kwargs});
  }
  AddLigerKernelFields(plan, fields);
  // --compile: the Trainer wraps the model in torch.compile (Inductor by default).
  if (plan.compile) add_bool("torch_compile", true);
  add_float("max_grad_norm", options.max_grad_norm);
  add_string("optim", HfOptimName(plan.optimizer, plan.optimizer_impl));
  // Not invented: written when the user gave them, else TrainingArguments' defaults apply.
  if (options.learning_rate) add_float("learning_rate", *options.learning_rate);
  if (std::optional<double> decay = WrittenWeightDecay(plan, options))
    add_float("weight_decay", *decay);
  if (plan.optimizer == OptimizerKind::kAdam || plan.optimizer == OptimizerKind::kAdamW) {
    add_float("adam_beta1", kAdamBeta1);
    add_float("adam_beta2", kAdamBeta2);
    add_float("adam_epsilon", kAdamEps);
  }
  add_int("dataloader_num_workers", options.dataloader_num_workers);
  add_bool("dataloader_pin_memory", options.pin_memory);
  if (plan.data_parallel) {
    const DataParallelOptions& dp = *plan.data_parallel;
    if (IsFsdp(dp.strategy)) {
      // TrainingArguments' FSDPOption spellings: full_shard, shard_grad_op, hybrid_shard.
      const std::string strategy = FsdpShardingStrategy(dp);
      add_string("fsdp", (strategy == "HYBRID_SHARD"         ? "hybrid_shard"
                          : strategy == "HYBRID_SHARD_ZERO2" ? "hybrid_shard_zero2"
                          : strategy == "SHARD_GRAD_OP"      ? "shard_grad_op"
                                                             : "full_shard") +
                             std::string(" auto_wrap"));
      // transformers >= 5 defaults to FSDP2, whose TrainingArguments accept only full_shard
      // and shard_grad_op ("`fsdp=hybrid_shard` is only available with FSDP1"): a hybrid plan
      // names FSDP1, which runs HYBRID_SHARD as planned.
      const bool hybrid = strategy.rfind("HYBRID_SHARD", 0) == 0;
      nlohmann::ordered_json config = nlohmann::ordered_json::object();
      std::string text = "{";
      if (!dp.fsdp_wrap_blocks) {
        // Without min_num_params the Trainer wraps the model's _no_split_modules (its layers).
        config["min_num_params"] = dp.fsdp_min_unit_parameters;
        text += "\"min_num_params\": " + std::to_string(dp.fsdp_min_unit_parameters) + ", ";
      }
      config["backward_prefetch"] = "backward_pre";
      text += "\"backward_prefetch\": \"backward_pre\"";
      if (hybrid) {
        config["version"] = 1;
        text += ", \"version\": 1";
      }
      fields.push_back(Field{"fsdp_config", text + "}", config});
    } else if (dp.strategy != ParallelStrategy::kDdp) {
      add_string("deepspeed", DeepSpeedConfigFile());
    }
  }
  return fields;
}

// The launch line for N ranks: torchrun for DDP and FSDP, the deepspeed launcher for ZeRO (the
// config file must exist: it is written by the DeepSpeed export of the same plan).
std::string HfLaunchComment(const PlanReport& plan, const ExportOptions& options) {
  if (!plan.data_parallel) return "";
  const std::string per_node = std::to_string(plan.Gpus() / plan.Nodes());
  const std::string nodes = std::to_string(plan.Nodes());
  std::string out = "# " + std::to_string(plan.Gpus()) +
                    " GPUs: " + std::to_string(plan.SamplesPerStep()) +
                    " samples per optimizer step (per-device batch x accumulation x GPUs).\n";
  if (plan.data_parallel->strategy == ParallelStrategy::kDdp ||
      IsFsdp(plan.data_parallel->strategy)) {
    out += "# Launch: torchrun --nproc_per_node " + per_node +
           (plan.Nodes() > 1 ? " --nnodes " + nodes + " --node_rank R --master_addr HOST" : "") +
           " train.py\n";
  } else {
    out += "# " + DeepSpeedConfigFile() + " is the DeepSpeed config of this plan: `" +
           ExportCommand(options, "deepspeed") + " > " + DeepSpeedConfigFile() + "`.\n";
    out += "# Launch: deepspeed --num_gpus " + per_node +
           (plan.Nodes() > 1 ? " --num_nodes " + nodes + " --hostfile hostfile" : "") +
           " train.py\n";
  }
  return out;
}

// gradient_checkpointing=True checkpoints every layer (every block of a model that supports it):
// exact for a module plan of all blocks; otherwise the comment says which part the flag cannot
// express.
std::string HfRecomputeComment(const PlanReport& plan, const ExportOptions& options) {
  if (!plan.UsesRecompute()) return "";
  if (plan.ChecksEveryModule()) {
    return "# gradient_checkpointing=True checkpoints every layer, exactly as planned: the plan\n"
           "# checkpoints all " +
           std::to_string(plan.checkpointable_modules) + " blocks (" +
           CommentSafe(plan.recompute_modules.front()) + " ... " +
           CommentSafe(plan.recompute_modules.back()) + ").\n";
  }
  const std::string all = plan.checkpointable_modules > 0
                              ? "all " + std::to_string(plan.checkpointable_modules) + " blocks"
                              : "every layer of a model that supports it";
  return RecomputeModuleComment(
      plan,
      "TrainingArguments cannot express the plan's recompute: gradient_checkpointing=True\n"
      "# checkpoints " +
          all +
          " (more than planned: less memory, a slower step;\n"
          "# `" +
          ExportCommand(options, "pytorch") +
          "` runs exactly the plan, or re-plan with\n"
          "# --recompute all for what Trainer runs). The plan recomputes only these modules:");
}

}  // namespace

std::string ExportHfTrainerPython(const PlanReport& plan, const ExportOptions& options) {
  std::string out = "# " + ProvenanceSentence(plan, options) + "\n";
  out += "# Trainer runs per_device_train_batch_size samples per forward/backward and steps the\n";
  out += "# optimizer every gradient_accumulation_steps micro-batches.\n";
  out += HfRecomputeComment(plan, options);
  out += HfLaunchComment(plan, options);
  std::vector<std::string> unset;
  if (!options.learning_rate) unset.push_back("learning_rate");
  if (!WrittenWeightDecay(plan, options)) unset.push_back("weight_decay");
  for (const std::string& name : unset)
    out += "# " + name + " is yours to set (the plan does not decide it); without it\n" +
           "# TrainingArguments' default applies.\n";
  if (plan.optimizer == OptimizerKind::kMomentum) {
    out +=
        "# optim=\"sgd\" is torch.optim.SGD without momentum; the plan keeps a momentum buffer,\n";
    out += "# so pass Trainer(..., optimizers=(optimizer, None)) with\n";
    out += "#   optimizer = " + TorchOptimizerCall(plan, options, "model.parameters()") + "\n";
    out += "# (LEARNING_RATE and SGD_MOMENTUM > 0 yours to set).\n";
  }
  if (!plan.ClipsGradients()) {
    out += "# max_grad_norm=0.0: the plan was made without --clip-grad, so its memory has no\n";
    out += "# clipping transient; re-plan with --clip-grad for Trainer's default clipping (1.0).\n";
  }
  out += AllocConfLines(plan);
  if (HasFineTuning(plan)) {
    out += "# Build the model as planned, then pass it on:\n";
    out += "#   trainer = Trainer(model=apply_fine_tuning(model), args=args, ...)\n";
    out += "import torch\n";
  }
  out += FineTuneImports(plan);
  out += "from transformers import TrainingArguments\n\n";
  out += FineTuneSection(plan);
  out += "args = TrainingArguments(\n";
  for (const Field& field : TrainingArgumentFields(plan, options))
    out += "    " + field.name + "=" + field.python + ",\n";
  out += ")\n";
  return out;
}

std::string ExportHfTrainerJson(const PlanReport& plan, const ExportOptions& options) {
  // No provenance key: HfArgumentParser.parse_json_file and TrainingArguments(**d) reject keys
  // that are not TrainingArguments fields (see export_config.h).
  nlohmann::ordered_json object = nlohmann::ordered_json::object();
  for (const Field& field : TrainingArgumentFields(plan, options)) object[field.name] = field.json;
  return object.dump(2) + "\n";
}

}  // namespace memplan::config_export
