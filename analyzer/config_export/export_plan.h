#pragma once
// The facts of a memplan plan that the verbs after `analyze` need from a plan: a framework
// configuration (each exporter only formats them) and the program `verify --plan` runs. Taken from
// this process's PlanReport (`analyze --export`), or read and validated once, by the one reader of
// a saved plan, from a `memplan analyze --json` object (docs/json_schema.md; `memplan export` and
// `memplan verify --plan` both read through ReadSavedPlan).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include "analyzer/config_export/plan_json_fields.h"
#include "analyzer/parallel/data_parallel_options.h"
#include "analyzer/program/loss_scaling.h"
#include "analyzer/recompute/checkpoint_modules.h"
#include "analyzer/report/lora_plan_report.h"
#include "analyzer/report/plan_report.h"
#include "analyzer/vocabulary/amp_mode.h"
#include "analyzer/vocabulary/attention_mode.h"
#include "analyzer/vocabulary/base_dtype.h"
#include "analyzer/vocabulary/loss_kind.h"
#include "analyzer/vocabulary/offload_hooks.h"
#include "analyzer/vocabulary/offload_mode.h"
#include "analyzer/vocabulary/optimizer_impl.h"
#include "analyzer/vocabulary/optimizer_kind.h"
#include "analyzer/vocabulary/precision.h"
#include "graph/expected.h"

namespace memplan {

struct ExportPlan {
  std::string model_path;  // model.path as the plan recorded it
  std::string model_name;  // model.name
  int64_t micro_batch = 1;
  int64_t accumulation_steps = 1;
  Precision precision = Precision::kFp32;
  // plan.amp_mode: the regime the plan modelled (mixed precision only). nullopt: a plan written
  // before memplan modelled regimes, exported as it always was (each framework's own AMP).
  std::optional<AmpMode> amp_mode;
  OptimizerKind optimizer = OptimizerKind::kAdamW;
  // plan.optimizer_impl: the torch.optim implementation the plan modelled (foreach / fused /
  // for-loop), written as the constructor's foreach= / fused= keyword. nullopt: a plan written
  // before memplan modelled it, or an optimizer with its own kernels: no keyword is written.
  std::optional<OptimizerImpl> optimizer_impl;
  // optimizer.zero_grad(set_to_none=...): true frees the gradients between optimizer steps.
  bool zero_grad_set_to_none = true;
  // plan.clip_gradients: whether the simulated program clips the gradient norm. nullopt: a plan
  // written before memplan recorded it, which the exports clip as the frameworks do by default
  // (ClipsGradients) and verify runs as analyze plans without --clip-grad (no clipping). When
  // false every export disables clipping, whatever ExportOptions::max_grad_norm says.
  std::optional<bool> clip_gradients;
  std::vector<std::string> recompute_nodes;  // plan.recompute, in plan order
  // plan.recompute_op_types (absent: none): the op type of each recomputed node whose name does
  // not end in it (a dynamo export's FX names), for the selective-checkpoint policy.
  std::map<std::string, std::string> recompute_op_types;
  // plan.recompute_unit == "module": the plan checkpointed whole modules, plan.recompute_modules,
  // and simulated exactly torch.utils.checkpoint on each; plan.checkpointable_modules is how many
  // repeated blocks the model has (0 when the plan does not say).
  bool module_unit = false;
  // plan.recompute_reentrant (absent: false): torch.utils.checkpoint(use_reentrant=True), what the
  // exports pass where they have the switch (HF's gradient_checkpointing_kwargs, the scripts'
  // checkpoint calls); torchtune's NO_REENTRANT wrapper has none and refuses.
  bool recompute_reentrant = false;
  std::vector<std::string> recompute_modules;
  int64_t checkpointable_modules = 0;
  // recompute_nodes grouped by module: the planned modules for a module plan, else each node's
  // checkpoint module (CheckpointModuleForNode: more than the plan simulated).
  CheckpointModules checkpoints;

  // plan.parallel / plan.gpus / plan.nodes: the data-parallel strategy and group (nullopt: one
  // GPU). Bucket sizes and the other engine settings are the defaults the plan was derived with.
  std::optional<DataParallelOptions> data_parallel;
  // plan.offload.mode (absent: none): what the plan keeps in pinned host memory. The exports
  // write it as the engine setting that does it or refuse (export_config.cc).
  OffloadMode offload = OffloadMode::kNone;
  // plan.offload.hooks (absent: save-on-cpu): with activations offload, whose hooks move them;
  // torchtune's (OffloadActivations) only the torchtune export expresses.
  OffloadHooks offload_hooks = OffloadHooks::kSaveOnCpu;
  // plan.fused_loss (absent: false): the plan modelled Liger's fused linear cross entropy, which
  // the training run must use too (HF Trainer: use_liger_kernel=True; elsewhere a note).
  bool fused_loss = false;
  // plan.optimizer_in_backward (absent: false): torchtune's optimizer_in_bwd, which only the
  // torchtune target has a switch for (export_config.cc refuses it elsewhere).
  bool optimizer_in_backward = false;
  // plan.loss_dtype (absent: as the regime implies): "fp32" in a pure plan means the loop
  // upcasts the logits for the loss (the PyTorch loop writes .float()).
  bool upcasts_loss = false;
  // plan.loss_dtype names a half dtype: the plan's loss ran on half logits (false when absent).
  bool half_loss = false;
  // plan.loss_chunks (--loss-chunks; absent: 0, unchunked): torchtune's CEWithChunkedOutputLoss
  // num_output_chunks.
  int64_t loss_chunks = 0;
  // plan.compile (absent: false; --compile): a plan of the saved set AOTAutograd's partitioner
  // keeps under torch.compile, which the run must compile too: torchtune's compile: True, the
  // Trainer's torch_compile=True, Accelerate's dynamo_backend, model = torch.compile(model) in the
  // scripts. DeepSpeed's JSON has no switch for it and refuses (export_config.cc).
  bool compile = false;
  // model.parameter_count and plan.trainable_parameter_count (0 when the plan does not say):
  // a target that trains every parameter refuses a partly frozen plan without LoRA.
  int64_t parameter_count = 0;
  int64_t trainable_parameter_count = 0;
  // plan.alloc_conf (--alloc-conf, --allocator expandable; absent: PyTorch's defaults): the
  // PYTORCH_CUDA_ALLOC_CONF the plan modelled, which the scripts set before importing torch and
  // the config-only targets refuse (they have no place for an environment variable).
  std::string alloc_conf;
  // plan.lora (--lora): the adapters the run must build (PEFT's LoraConfig), nullopt without.
  std::optional<LoraPlanReport> lora;
  // plan.base_dtype (--base-dtype): the frozen weights' storage; nullopt: the model's own dtype.
  // int8 and nf4 are bitsandbytes' quantised linear layers, loaded as such (BitsAndBytesConfig).
  std::optional<BaseDType> base_dtype;

  // plan.tensor_parallel (--tp): GPUs per model replica, and the weights split column- and
  // row-parallel (parameter names, in graph order). 1 and empty without --tp.
  int64_t tensor_parallel = 1;
  std::vector<std::string> column_parallel;
  std::vector<std::string> row_parallel;

  // What only `verify --plan` reads (the program it runs); the exporters do not write them.
  // plan.attention.requested (absent: eager, a plan written before --attention): the attention
  // rewrite the plan's node names belong to.
  AttentionMode attention = AttentionMode::kEager;
  LossKind loss = LossKind::kAuto;  // plan.loss (absent: auto)
  // plan.loss_terms (--loss-output a,b): each term's output and loss kind, in order; empty for
  // a loss on one output.
  std::vector<std::string> loss_outputs;
  std::vector<LossKind> output_losses;
  // plan.loss_scaling; nullopt: the precision's default (analyzer/program/loss_scaling.h).
  std::optional<LossScalingMode> loss_scaling;
  // plan.loss_scale: the static scale or the dynamic scaler's start; nullopt: the default start.
  // One no float32 scaler holds (0, -0, beyond 3.4e38) is refused by the reader.
  std::optional<double> loss_scale;
  std::vector<std::string> fp16_nodes;  // plan.fp16_ops (node names)
  std::vector<std::string> fp32_nodes;  // plan.fp32_ops
  std::vector<PlanBinding> bindings;    // bindings (the saved document's symbol sizes)

  // Every GPU (process) the plan runs on: data-parallel replicas x tensor-parallel ranks.
  int64_t Gpus() const { return DataParallelRanks() * tensor_parallel; }
  int64_t DataParallelRanks() const { return data_parallel ? data_parallel->ranks : 1; }
  int64_t Nodes() const { return data_parallel ? data_parallel->nodes : 1; }
  // Samples per optimizer step over every replica. Computed, never read from plan.global_batch:
  // DeepSpeed asserts train_batch_size == micro * accumulation * data-parallel ranks (the ranks
  // of one tensor-parallel group read the same samples).
  int64_t SamplesPerStep() const { return micro_batch * accumulation_steps * DataParallelRanks(); }
  bool QuantizedBase() const {
    return base_dtype == BaseDType::kInt8 || base_dtype == BaseDType::kNf4;
  }
  bool ClipsGradients() const { return clip_gradients.value_or(true); }
  bool UsesRecompute() const { return !recompute_nodes.empty() || !recompute_modules.empty(); }
  // A module plan that checkpoints every repeated block: what HF's gradient_checkpointing runs.
  bool ChecksEveryModule() const {
    return module_unit && checkpointable_modules > 0 &&
           static_cast<int64_t>(recompute_modules.size()) == checkpointable_modules;
  }
};

// The plan of this process's analysis, without a JSON round trip.
ExportPlan ExportPlanOf(const PlanReport& report);

// The one reader of a saved plan: the plan object of a `memplan analyze --json` document.
// Accepted spellings (case-insensitive):
//   plan.precision:  "fp32" | "fp16" | "bf16"
//   plan.amp_mode:   "autocast" | "master-weights" | "pure" (optional; read for mixed plans)
//   plan.optimizer:  "sgd" | "momentum" / "sgd-momentum" / "sgd_momentum" | "adam" | "adamw" |
//                    "adafactor"
//   plan.optimizer_impl: "foreach" | "fused" | "for-loop" (optional)
//   plan.zero_grad:  "set_to_none" / "none" (default when absent) | "zero" / "zeros"
//   plan.clip_gradients: true | false (optional)
//   plan.recompute_op_types: {node name: op type} (optional)
//   plan.attention.requested, plan.loss, plan.loss_scaling: "none" | "static" | "dynamic",
//                    plan.loss_terms ([{"output", "loss"}]), plan.fp16_ops, plan.fp32_ops,
//                    bindings: read for verify (all optional)
//   plan.recompute_unit: "node" (default when absent) | "module"; with "module",
//                    plan.recompute_modules (module paths) and plan.checkpointable_modules (>= 0)
//   plan.offload.mode: "none" (default when plan.offload is absent) | "optimizer" |
//                    "optimizer+params" | "activations"
//   plan.fused_loss: true | false (default false)
//   plan.optimizer_in_backward: true | false (default false)
//   plan.loss_dtype: "fp32" | "bf16" | "fp16" (optional)
//   plan.loss_chunks: integer >= 0 (optional, default 0)
//   plan.compile: true | false (default false)
//   model.parameter_count, plan.trainable_parameter_count: integers >= 0 (optional)
//   plan.lora:       {"rank": r >= 1, "alpha" (default r), "dropout" (default 0),
//                    "target_modules": [...], "peft_target_modules" (default target_modules)}
//   plan.base_dtype: "fp32" | "bf16" | "fp16" | "int8" | "nf4" (optional)
// Errors name the missing or invalid key; the caller says which file and verb.
Expected<ExportPlan> ReadSavedPlan(const nlohmann::json& plan_json);
// ReadSavedPlan for `memplan export`: an error says the plan cannot be exported and what a plan
// file is expected to be.
Expected<ExportPlan> ReadExportPlan(const nlohmann::json& plan_json);

}  // namespace memplan
