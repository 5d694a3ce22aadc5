// torchtune recipe config YAML (`tune run <recipe> --config FILE`), for the four recipes that
// train a language model: full_finetune_single_device, full_finetune_distributed,
// lora_finetune_single_device and lora_finetune_distributed (QLoRA is the LoRA recipe with an NF4
// base: the model builder's quantize_base). The keys are those the recipes read (torchtune 0.6:
// recipes/*.py `cfg.<key>` and `cfg.get("<key>")`); what the plan decides is written from it,
// what it does not (the model builder, tokenizer, checkpoint and data set, the learning rate) is
// OmegaConf's mandatory-value marker `???`, which `tune run` refuses to start with until set.
//
// torchtune casts the whole model to `dtype` (bf16 or fp32; the recipes raise on fp16) and keeps
// no fp32 masters: a pure plan. What a recipe cannot run of a plan is refused before this file is
// reached (export_config.cc, CheckTorchtune).

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "analyzer/config_export/export_text.h"
#include "analyzer/config_export/exporters.h"
#include "analyzer/config_export/torchtune_lora_modules.h"
#include "analyzer/vocabulary/enum_table.h"

namespace memplan::config_export {
namespace {

constexpr std::string_view kMissing = "???";  // OmegaConf's mandatory value: the user's to set

// The recipe `tune run` starts for this plan.
std::string RecipeName(const PlanReport& plan) {
  return std::string(plan.lora ? "lora" : "full") + "_finetune_" +
         (plan.data_parallel ? "distributed" : "single_device");
}

// The optimizer component for each memplan optimizer: torch.optim's classes for the ones the plan
// simulates as torch's (the implementation keyword below), bitsandbytes' for the 8-bit and paged
// ones and Lion (32-bit state, as HF's lion_32bit), transformers' Adafactor (HF's, which memplan
// models). torchtune instantiates any importable path.
constexpr EnumTable<OptimizerKind, std::string_view, 8> kTorchtuneOptimizers = {{
    {OptimizerKind::kSgd, "torch.optim.SGD"},
    {OptimizerKind::kMomentum, "torch.optim.SGD"},
    {OptimizerKind::kAdam, "torch.optim.Adam"},
    {OptimizerKind::kAdamW, "torch.optim.AdamW"},
    {OptimizerKind::kAdafactor, "transformers.optimization.Adafactor"},
    {OptimizerKind::kAdamW8bit, "bitsandbytes.optim.AdamW8bit"},
    {OptimizerKind::kPagedAdamW8bit, "bitsandbytes.optim.PagedAdamW8bit"},
    {OptimizerKind::kLion, "bitsandbytes.optim.Lion"},
}};
static_assert(ListsEvery(kTorchtuneOptimizers, kOptimizerKindNames));

// `key: ???  # comment`: a value the plan does not decide, which tune run refuses to start with.
void Missing(YAML::Emitter& out, std::string_view key, std::string_view comment = {}) {
  out << YAML::Key << std::string(key) << YAML::Value << std::string(kMissing);
  if (!comment.empty()) out << YAML::Comment(std::string(comment));
}

void OptimizerSection(YAML::Emitter& out, const PlanReport& plan, const ExportOptions& options) {
  out << YAML::Key << "optimizer" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "_component_" << YAML::Value
      << std::string(ValueOf(kTorchtuneOptimizers, plan.optimizer));
  if (plan.optimizer_impl) {
    switch (*plan.optimizer_impl) {
      case OptimizerImpl::kForeach:
        out << YAML::Key << "foreach" << YAML::Value << true;
        break;
      case OptimizerImpl::kFused:
        out << YAML::Key << "fused" << YAML::Value << true;
        break;
      case OptimizerImpl::kForLoop:
        out << YAML::Key << "foreach" << YAML::Value << false;
        break;
    }
  }
  // Floats as Python writes them (1e-08, 16.0): a plain scalar YAML reads as a float.
  if (options.learning_rate)
    out << YAML::Key << "lr" << YAML::Value << PythonFloat(*options.learning_rate);
  else
    Missing(out, "lr", "yours to set (memory does not depend on it)");
  if (std::optional<double> decay = WrittenWeightDecay(plan, options)) {
    // transformers' Adafactor and bitsandbytes' optimizers take weight_decay too; SGD and Adam
    // get 0 (the plan simulated no decay).
    out << YAML::Key << "weight_decay" << YAML::Value << PythonFloat(*decay);
  }
  if (plan.optimizer == OptimizerKind::kMomentum) {
    if (options.sgd_momentum)
      out << YAML::Key << "momentum" << YAML::Value << PythonFloat(*options.sgd_momentum);
    else
      Missing(out, "momentum", "> 0, yours to set (the plan keeps a momentum buffer)");
  }
  if (plan.optimizer == OptimizerKind::kAdafactor) {
    // With an explicit lr, transformers' Adafactor needs relative_step off.
    out << YAML::Key << "relative_step" << YAML::Value << false;
    out << YAML::Key << "scale_parameter" << YAML::Value << false;
  }
  out << YAML::EndMap;
}

// The loss: torchtune's CEWithChunkedOutputLoss when the plan chunks it (the recipe then sets the
// model's num_output_chunks, so the output projection runs per chunk too), else
// torch.nn.CrossEntropyLoss over the whole [tokens, vocab] logits (ignore_index -100 by default,
// torchtune's CROSS_ENTROPY_IGNORE_IDX).
void LossSection(YAML::Emitter& out, const PlanReport& plan) {
  out << YAML::Key << "loss" << YAML::Value << YAML::BeginMap;
  if (plan.loss_chunks > 0) {
    out << YAML::Key << "_component_" << YAML::Value
        << "torchtune.modules.loss.CEWithChunkedOutputLoss";
    out << YAML::Key << "num_output_chunks" << YAML::Value << plan.loss_chunks;
  } else {
    out << YAML::Key << "_component_" << YAML::Value << "torch.nn.CrossEntropyLoss";
  }
  out << YAML::EndMap;
}

// The model builder is the user's (an ONNX file does not say which torchtune builder made it);
// the LoRA settings are the plan's (plan.lora: rank, alpha and dropout as simulated; memplan
// inserts no dropout, which would add an input-sized transient per adapter).
void ModelSection(YAML::Emitter& out, const PlanReport& plan) {
  out << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
  const bool qlora = plan.base_dtype == BaseDType::kNf4;
  const std::string example = !plan.lora ? "torchtune.models.llama3_2.llama3_2_1b"
                              : qlora    ? "torchtune.models.llama3_2.qlora_llama3_2_1b"
                                         : "torchtune.models.llama3_2.lora_llama3_2_1b";
  Missing(out, "_component_", "your model's builder, e.g. " + example);
  if (plan.lora) {
    const TorchtuneLoraModules modules = TorchtuneLoraModulesOf(plan.lora->target_modules);
    out << YAML::Key << "lora_attn_modules" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const std::string& name : modules.attention) out << YAML::SingleQuoted << name;
    out << YAML::EndSeq;
    out << YAML::Key << "apply_lora_to_mlp" << YAML::Value << modules.mlp;
    out << YAML::Key << "apply_lora_to_output" << YAML::Value << modules.output;
    out << YAML::Key << "lora_rank" << YAML::Value << plan.lora->rank;
    out << YAML::Key << "lora_alpha" << YAML::Value
        << PythonFloat(static_cast<double>(plan.lora->alpha));
    out << YAML::Key << "lora_dropout" << YAML::Value << PythonFloat(plan.lora->dropout);
    if (qlora)
      out << YAML::Key << "quantize_base" << YAML::Value << true
          << YAML::Comment("QLoRA: the frozen base in NF4, as planned");
  }
  out << YAML::EndMap;
}

// A comment paragraph for LoRA targets torchtune's switches do not name one by one: a module
// name memplan cannot map, or only part of the MLP (torchtune adapts w1, w2 and w3 together).
std::string LoraComment(const PlanReport& plan) {
  if (!plan.lora) return "";
  const TorchtuneLoraModules modules = TorchtuneLoraModulesOf(plan.lora->target_modules);
  std::string out;
  if (!modules.unmapped.empty()) {
    out += "# LoRA targets with no torchtune switch (not adapted by this config: less memory\n";
    out += "# than planned for their adapters):\n";
    for (const std::string& name : modules.unmapped) out += "#   " + CommentSafe(name) + "\n";
  }
  if (modules.mlp && modules.partial_mlp) {
    out += "# apply_lora_to_mlp adapts w1, w2 and w3 of every layer; the plan adapted only some\n";
    out += "# of them (more adapters than planned: a little more memory).\n";
  }
  return out;
}

// enable_activation_checkpointing wraps every TransformerSelfAttentionLayer in a non-reentrant
// checkpoint (training.set_activation_checkpointing): exact for a module plan of every block.
std::string RecomputeComment(const PlanReport& plan, const ExportOptions& options) {
  if (!plan.UsesRecompute() || plan.ChecksEveryModule()) return "";
  const std::string all = plan.checkpointable_modules > 0
                              ? "all " + std::to_string(plan.checkpointable_modules) + " layers"
                              : "every transformer layer";
  return RecomputeModuleComment(
      plan,
      "torchtune cannot express the plan's recompute: enable_activation_checkpointing\n"
      "# checkpoints " +
          all +
          " (more than planned: less memory, a slower step;\n"
          "# `" +
          ExportCommand(options, "pytorch") +
          "` runs exactly the plan). The plan recomputes only these modules:");
}

std::string LaunchComment(const PlanReport& plan) {
  const std::string file(ExportTargetDefaultFileName(ExportTarget::kTorchtune));
  std::string out = "# Run: tune run ";
  if (plan.data_parallel) {
    out += "--nproc_per_node " + std::to_string(plan.Gpus() / plan.Nodes()) + " ";
    if (plan.Nodes() > 1)
      out += "--nnodes " + std::to_string(plan.Nodes()) + " --rdzv-endpoint HOST:PORT ";
  }
  out += RecipeName(plan) + " --config " + file + "\n";
  if (plan.data_parallel) {
    out += "# " + std::to_string(plan.Gpus()) + " GPUs: " + std::to_string(plan.SamplesPerStep()) +
           " samples per optimizer step (batch_size x gradient_accumulation_steps x GPUs).\n";
  }
  if (plan.offload == OffloadMode::kActivations &&
      plan.offload_hooks != OffloadHooks::kTorchtuneStreams) {
    // enable_activation_offloading builds OffloadActivations() with use_streams=True
    // (torchtune/training/_activation_offloading.py, get_act_offloading_ctx_manager).
    out += "# enable_activation_offloading runs torchtune's OffloadActivations with its copy\n";
    out += "# stream (use_streams=True), not the --offload-hooks " +
           std::string(OffloadHooksName(plan.offload_hooks)) + " the plan modelled;\n";
    out += "# re-plan with --offload-hooks torchtune-streams for its GPU peak\n";
    out += "# (docs/finetuning.md).\n";
  }
  out += "# Every `???` is yours to set (the plan does not decide it); tune run refuses to start\n";
  out += "# while one is left. tokenizer.max_seq_len: the sequence length the plan was made at.\n";
  return out;
}

}  // namespace

std::string ExportTorchtune(const PlanReport& plan, const ExportOptions& options) {
  // The comment paragraphs first, as text (each line a `#` comment: CommentSafe and the
  // paragraph builders keep user names on one line); the document itself is yaml-cpp's, which
  // quotes what a plain scalar cannot hold (an output folder with `: ` or `#`).
  std::string preamble = "# " + ProvenanceSentence(plan, options) + "\n";
  preamble += LaunchComment(plan);
  preamble += LoraComment(plan);
  preamble += RecomputeComment(plan, options);

  YAML::Emitter out;
  out.SetBoolFormat(YAML::CamelCase);  // True / False, as torchtune's own configs write them
  out.SetNullFormat(YAML::LowerNull);
  out << YAML::BeginMap;
  out << YAML::Key << "output_dir" << YAML::Value << options.hf_output_dir;
  ModelSection(out, plan);
  out << YAML::Key << "tokenizer" << YAML::Value << YAML::BeginMap;
  Missing(out, "_component_", "e.g. torchtune.models.llama3.llama3_tokenizer");
  Missing(out, "path");
  Missing(out, "max_seq_len");
  out << YAML::EndMap;
  out << YAML::Key << "checkpointer" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "_component_" << YAML::Value << "torchtune.training.FullModelHFCheckpointer";
  Missing(out, "checkpoint_dir");
  Missing(out, "checkpoint_files");
  out << YAML::Key << "recipe_checkpoint" << YAML::Value << YAML::Null;
  out << YAML::Key << "output_dir" << YAML::Value << "${output_dir}";
  Missing(out, "model_type", "e.g. LLAMA3_2");
  out << YAML::EndMap;
  out << YAML::Key << "resume_from_checkpoint" << YAML::Value << false;
  if (plan.lora) out << YAML::Key << "save_adapter_weights_only" << YAML::Value << false;
  out << YAML::Key << "dataset" << YAML::Value << YAML::BeginMap;
  Missing(out, "_component_", "e.g. torchtune.datasets.alpaca_cleaned_dataset");
  out << YAML::Key << "packed" << YAML::Value << false;
  out << YAML::EndMap;
  out << YAML::Key << "seed" << YAML::Value << YAML::Null;
  out << YAML::Key << "shuffle" << YAML::Value << true;
  out << YAML::Key << "batch_size" << YAML::Value << plan.micro_batch;
  OptimizerSection(out, plan, options);
  out << YAML::Key << "lr_scheduler" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "_component_" << YAML::Value
      << "torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup";
  out << YAML::Key << "num_warmup_steps" << YAML::Value << 100;
  out << YAML::EndMap;
  LossSection(out, plan);
  out << YAML::Key << "epochs" << YAML::Value << 1;
  out << YAML::Key << "max_steps_per_epoch" << YAML::Value << YAML::Null;
  out << YAML::Key << "gradient_accumulation_steps" << YAML::Value << plan.accumulation_steps;
  // Issue 40 item 3: torchtune's optimizer_in_bwd steps each parameter from its gradient hook;
  // the recipes refuse it with clipping (and with accumulation, refused earlier).
  out << YAML::Key << "optimizer_in_bwd" << YAML::Value << plan.optimizer_in_backward;
  out << YAML::Key << "clip_grad_norm" << YAML::Value;
  if (options.max_grad_norm > 0 && !plan.optimizer_in_backward)
    out << PythonFloat(options.max_grad_norm);
  else
    out << YAML::Null;
  out << YAML::Key << "compile" << YAML::Value << plan.compile;
  out << YAML::Key << "device" << YAML::Value << "cuda";
  out << YAML::Key << "dtype" << YAML::Value
      << (plan.precision == Precision::kBf16 ? "bf16" : "fp32");
  out << YAML::Key << "enable_activation_checkpointing" << YAML::Value << plan.UsesRecompute();
  out << YAML::Key << "enable_activation_offloading" << YAML::Value
      << (plan.offload == OffloadMode::kActivations);
  if (plan.data_parallel) {
    // FSDP2 fully_shard on every transformer layer and the root (training.shard_model).
    out << YAML::Key << "fsdp_cpu_offload" << YAML::Value
        << (plan.offload == OffloadMode::kOptimizerAndParams);
    out << YAML::Key << "fsdp_reshard_after_forward" << YAML::Value
        << plan.data_parallel->reshard_after_forward;
  }
  out << YAML::Key << "metric_logger" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "_component_" << YAML::Value
      << "torchtune.training.metric_logging.DiskLogger";
  out << YAML::Key << "log_dir" << YAML::Value << "${output_dir}/logs";
  out << YAML::EndMap;
  out << YAML::Key << "log_every_n_steps" << YAML::Value << 1;
  out << YAML::Key << "log_peak_memory_stats" << YAML::Value << true;
  out << YAML::EndMap;
  return preamble + out.c_str() + "\n";
}

}  // namespace memplan::config_export
