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

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/config_export/export_text.h"
#include "analyzer/config_export/exporters.h"
#include "analyzer/config_export/torchtune_lora_modules.h"
#include "analyzer/vocabulary/enum_table.h"

namespace memplan::config_export {
namespace {

constexpr std::string_view kMissing = "???";  // OmegaConf's mandatory value: the user's to set

std::string YamlBool(bool value) { return value ? "True" : "False"; }

// The recipe `tune run` starts for this plan.
std::string RecipeName(const ExportPlan& plan) {
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

std::string OptimizerSection(const ExportPlan& plan, const ExportOptions& options) {
  std::string out = "optimizer:\n";
  out += "  _component_: " + std::string(ValueOf(kTorchtuneOptimizers, plan.optimizer)) + "\n";
  if (plan.optimizer_impl) {
    switch (*plan.optimizer_impl) {
      case OptimizerImpl::kForeach:
        out += "  foreach: True\n";
        break;
      case OptimizerImpl::kFused:
        out += "  fused: True\n";
        break;
      case OptimizerImpl::kForLoop:
        out += "  foreach: False\n";
        break;
    }
  }
  if (options.learning_rate) {
    out += "  lr: " + PythonFloat(*options.learning_rate) + "\n";
  } else {
    out += "  lr: " + std::string(kMissing) + "  # yours to set (memory does not depend on it)\n";
  }
  if (std::optional<double> decay = WrittenWeightDecay(plan, options)) {
    // transformers' Adafactor and bitsandbytes' optimizers take weight_decay too; SGD and Adam
    // get 0 (the plan simulated no decay).
    out += "  weight_decay: " + PythonFloat(*decay) + "\n";
  }
  if (plan.optimizer == OptimizerKind::kMomentum) {
    if (options.sgd_momentum) {
      out += "  momentum: " + PythonFloat(*options.sgd_momentum) + "\n";
    } else {
      out += "  momentum: " + std::string(kMissing) +
             "  # > 0, yours to set (the plan keeps a momentum buffer)\n";
    }
  }
  if (plan.optimizer == OptimizerKind::kAdafactor) {
    // With an explicit lr, transformers' Adafactor needs relative_step off.
    out += "  relative_step: False\n";
    out += "  scale_parameter: False\n";
  }
  return out;
}

// The loss: torchtune's CEWithChunkedOutputLoss when the plan chunks it (the recipe then sets the
// model's num_output_chunks, so the output projection runs per chunk too), else
// torch.nn.CrossEntropyLoss over the whole [tokens, vocab] logits (ignore_index -100 by default,
// torchtune's CROSS_ENTROPY_IGNORE_IDX).
std::string LossSection(const ExportPlan& plan) {
  std::string out = "loss:\n";
  if (plan.loss_chunks > 0) {
    out += "  _component_: torchtune.modules.loss.CEWithChunkedOutputLoss\n";
    out += "  num_output_chunks: " + std::to_string(plan.loss_chunks) + "\n";
  } else {
    out += "  _component_: torch.nn.CrossEntropyLoss\n";
  }
  return out;
}

// The model builder is the user's (an ONNX file does not say which torchtune builder made it);
// the LoRA settings are the plan's (plan.lora: rank, alpha and dropout as simulated; memplan
// inserts no dropout, which would add an input-sized transient per adapter).
std::string ModelSection(const ExportPlan& plan) {
  std::string out = "model:\n";
  const bool qlora = plan.base_dtype == BaseDType::kNf4;
  std::string example = !plan.lora ? "torchtune.models.llama3_2.llama3_2_1b"
                        : qlora    ? "torchtune.models.llama3_2.qlora_llama3_2_1b"
                                   : "torchtune.models.llama3_2.lora_llama3_2_1b";
  out += "  _component_: " + std::string(kMissing) + "  # your model's builder, e.g. " + example +
         "\n";
  if (!plan.lora) return out;
  const TorchtuneLoraModules modules = TorchtuneLoraModulesOf(plan.lora->target_modules);
  out += "  lora_attn_modules: [";
  for (size_t i = 0; i < modules.attention.size(); ++i)
    out += (i ? ", '" : "'") + modules.attention[i] + "'";
  out += "]\n";
  out += "  apply_lora_to_mlp: " + YamlBool(modules.mlp) + "\n";
  out += "  apply_lora_to_output: " + YamlBool(modules.output) + "\n";
  out += "  lora_rank: " + std::to_string(plan.lora->rank) + "\n";
  out += "  lora_alpha: " + PythonFloat(static_cast<double>(plan.lora->alpha)) + "\n";
  out += "  lora_dropout: " + PythonFloat(plan.lora->dropout) + "\n";
  if (qlora) out += "  quantize_base: True  # QLoRA: the frozen base in NF4, as planned\n";
  return out;
}

// A comment paragraph for LoRA targets torchtune's switches do not name one by one: a module
// name memplan cannot map, or only part of the MLP (torchtune adapts w1, w2 and w3 together).
std::string LoraComment(const ExportPlan& plan) {
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
std::string RecomputeComment(const ExportPlan& plan, const ExportOptions& options) {
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

std::string LaunchComment(const ExportPlan& plan) {
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
  if (plan.offload == OffloadMode::kActivations) {
    // training.OffloadActivations (torchtune/training/_activation_offloading.py) differs from
    // save_on_cpu, which the plan models, in what stays on the GPU.
    out += "# enable_activation_offloading runs torchtune's OffloadActivations, not the\n";
    out += "# torch.autograd.graph.save_on_cpu the plan modelled: parameters, tensors under\n";
    out += "# 1 KiB and the output head's saved tensors stay on the GPU, and its copy stream\n";
    out += "# keeps up to 5 offloaded tensors on the GPU until their copy is done\n";
    out += "# (docs/finetuning.md).\n";
  }
  out += "# Every `???` is yours to set (the plan does not decide it); tune run refuses to start\n";
  out += "# while one is left. tokenizer.max_seq_len: the sequence length the plan was made at.\n";
  return out;
}

}  // namespace

std::string ExportTorchtune(const ExportPlan& plan, const ExportOptions& options) {
  std::string out = "# " + ProvenanceSentence(plan, options) + "\n";
  out += LaunchComment(plan);
  out += LoraComment(plan);
  out += RecomputeComment(plan, options);
  out += "output_dir: " + options.hf_output_dir + "\n";
  out += ModelSection(plan);
  out += "tokenizer:\n";
  out += "  _component_: " + std::string(kMissing) +
         "  # e.g. torchtune.models.llama3.llama3_tokenizer\n";
  out += "  path: " + std::string(kMissing) + "\n";
  out += "  max_seq_len: " + std::string(kMissing) + "\n";
  out += "checkpointer:\n";
  out += "  _component_: torchtune.training.FullModelHFCheckpointer\n";
  out += "  checkpoint_dir: " + std::string(kMissing) + "\n";
  out += "  checkpoint_files: " + std::string(kMissing) + "\n";
  out += "  recipe_checkpoint: null\n";
  out += "  output_dir: ${output_dir}\n";
  out += "  model_type: " + std::string(kMissing) + "  # e.g. LLAMA3_2\n";
  out += "resume_from_checkpoint: False\n";
  if (plan.lora) out += "save_adapter_weights_only: False\n";
  out += "dataset:\n";
  out += "  _component_: " + std::string(kMissing) +
         "  # e.g. torchtune.datasets.alpaca_cleaned_dataset\n";
  out += "  packed: False\n";
  out += "seed: null\n";
  out += "shuffle: True\n";
  out += "batch_size: " + std::to_string(plan.micro_batch) + "\n";
  out += OptimizerSection(plan, options);
  out += "lr_scheduler:\n";
  out += "  _component_: torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup\n";
  out += "  num_warmup_steps: 100\n";
  out += LossSection(plan);
  out += "epochs: 1\n";
  out += "max_steps_per_epoch: null\n";
  out += "gradient_accumulation_steps: " + std::to_string(plan.accumulation_steps) + "\n";
  // Issue 40 item 3: torchtune's optimizer_in_bwd steps each parameter from its gradient hook;
  // the recipes refuse it with clipping (and with accumulation, refused earlier).
  out += "optimizer_in_bwd: " + YamlBool(plan.optimizer_in_backward) + "\n";
  if (options.max_grad_norm > 0 && !plan.optimizer_in_backward) {
    out += "clip_grad_norm: " + PythonFloat(options.max_grad_norm) + "\n";
  } else {
    out += "clip_grad_norm: null\n";
  }
  out += "compile: " + YamlBool(plan.compile) + "\n";
  out += "device: cuda\n";
  out += "dtype: " + std::string(plan.precision == Precision::kBf16 ? "bf16" : "fp32") + "\n";
  out += "enable_activation_checkpointing: " + YamlBool(plan.UsesRecompute()) + "\n";
  out +=
      "enable_activation_offloading: " + YamlBool(plan.offload == OffloadMode::kActivations) + "\n";
  if (plan.data_parallel) {
    // FSDP2 fully_shard on every transformer layer and the root (training.shard_model).
    out += "fsdp_cpu_offload: " + YamlBool(plan.offload == OffloadMode::kOptimizerAndParams) + "\n";
    out +=
        "fsdp_reshard_after_forward: " + YamlBool(plan.data_parallel->reshard_after_forward) + "\n";
  }
  out += "metric_logger:\n";
  out += "  _component_: torchtune.training.metric_logging.DiskLogger\n";
  out += "  log_dir: ${output_dir}/logs\n";
  out += "log_every_n_steps: 1\n";
  out += "log_peak_memory_stats: True\n";
  return out;
}

}  // namespace memplan::config_export
