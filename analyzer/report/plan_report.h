#pragma once
// The one plan type from the planner to the exporters: the typed facts of a chosen plan that the
// reports render and the verbs after `analyze` consume: `export` (the framework configuration;
// each exporter only formats these facts), `baseline` / `check` (the memory result) and `verify`
// (the program to run).
//
// Two ways in, one type out:
// - in process, PlanReportOf builds it once from the planner's result (AnalysisReport holds it:
//   report.plan_report), and the text, markdown, HTML and JSON writers render it;
// - from a file, the one reader of a saved plan (ReadSavedPlan, config_export/saved_plan_reader.h)
//   parses what `analyze --json` wrote under the memplan/1 keys back into it.
// The two routes cannot differ: the tests compare them field by field.
//
// Optional fields are the ones a saved plan may lack (written by an older memplan or by hand);
// PlanReportOf fills every one that applies to the plan.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/baseline/memory_result.h"
#include "analyzer/derivation/attention_plan.h"
#include "analyzer/derivation/fused_loss_plan.h"
#include "analyzer/parallel/data_parallel_options.h"
#include "analyzer/planning/planner.h"
#include "analyzer/program/loss_scaling.h"
#include "analyzer/recompute/checkpoint_modules.h"
#include "analyzer/report/lora_plan_report.h"
#include "analyzer/vocabulary/amp_mode.h"
#include "analyzer/vocabulary/attention_mode.h"
#include "analyzer/vocabulary/base_dtype.h"
#include "analyzer/vocabulary/loss_kind.h"
#include "analyzer/vocabulary/offload_hooks.h"
#include "analyzer/vocabulary/offload_mode.h"
#include "analyzer/vocabulary/optimizer_impl.h"
#include "analyzer/vocabulary/optimizer_kind.h"
#include "analyzer/vocabulary/precision.h"
#include "analyzer/vocabulary/recompute_unit.h"
#include "analyzer/vocabulary/zero_grad_mode.h"
#include "graph/fusion/fusion_set.h"
#include "graph/graph.h"
#include "graph/symbols.h"

namespace memplan {

struct PlanReport {
  std::string model_path;  // memplan/1 model.path
  std::string model_name;  // model.name

  // plan.micro_batch, plan.accumulation_steps, plan.precision.
  int64_t micro_batch = 1;
  int64_t accumulation_steps = 1;
  Precision precision = Precision::kFp32;
  // plan.amp_mode: the regime the plan modelled (mixed precision only). nullopt: an fp32 plan, or
  // a saved plan written before memplan modelled regimes, exported as it always was (each
  // framework's own AMP) and verified as master weights.
  std::optional<AmpMode> amp_mode;
  OptimizerKind optimizer = OptimizerKind::kAdamW;  // plan.optimizer
  // plan.optimizer_impl: the torch.optim implementation the plan modelled (foreach / fused /
  // for-loop), written as the constructor's foreach= / fused= keyword. nullopt: an optimizer with
  // its own kernels, or a saved plan written before memplan modelled it: no keyword is written.
  std::optional<OptimizerImpl> optimizer_impl;
  // plan.zero_grad: optimizer.zero_grad(set_to_none=...); set_to_none frees the gradients between
  // optimizer steps.
  ZeroGradMode zero_grad = ZeroGradMode::kSetToNone;
  // plan.clip_gradients: whether the simulated program clips the gradient norm. nullopt: a saved
  // plan written before memplan recorded it, which the exports clip as the frameworks do by
  // default (ClipsGradients) and verify runs as analyze plans without --clip-grad (no clipping).
  // When false every export disables clipping, whatever ExportOptions::max_grad_norm says.
  std::optional<bool> clip_gradients;

  // plan.loss (auto in a saved plan without it; resolved in a derived plan: a fused loss is
  // cross_entropy). plan.loss_terms (--loss-output a,b): each term's output and loss kind, in
  // order; empty for a loss on one output.
  LossKind loss = LossKind::kAuto;
  std::vector<std::string> loss_outputs;
  std::vector<LossKind> output_losses;
  // plan.loss_scaling; nullopt: the precision's default (analyzer/program/loss_scaling.h).
  std::optional<LossScalingMode> loss_scaling;
  // plan.loss_scale: the static scale or the dynamic scaler's start; nullopt: none (no scaling,
  // or the default start). One no float32 scaler holds (0, -0, beyond 3.4e38) the reader refuses.
  std::optional<double> loss_scale;
  // plan.loss_dtype (--loss-dtype, resolved): the dtype the loss computed in (kUndefined for a
  // plan without a loss step, or a saved plan that does not say). plan.loss_chunks
  // (--loss-chunks; 0 = unchunked: torchtune's CEWithChunkedOutputLoss num_output_chunks).
  DType loss_dtype = DType::kUndefined;
  int64_t loss_chunks = 0;
  // plan.fused_loss (--fused-loss): the LM head and cross entropy run as Liger's fused linear
  // cross entropy (analyzer/derivation/fused_loss_plan.h), which the training run must use too
  // (HF Trainer: use_liger_kernel=True; elsewhere a note).
  bool fused_loss = false;
  // plan.fusions (--fusions; written when not "ops"): the import fusions the graph was planned
  // with. kLiger is Liger Kernel's RMSNorm, SwiGLU, GeGLU, which the run must patch in too (HF
  // TrainingArguments' use_liger_kernel with liger_kernel_config; other targets refuse).
  FusionSet fusions = FusionSet::kFusedOps;

  std::vector<std::string> recompute_nodes;  // plan.recompute, in plan order
  // plan.recompute_op_types: the op type of each recomputed node whose name does not end in it (a
  // dynamo export's FX names), for the exports' selective-checkpoint policies.
  std::map<std::string, std::string> recompute_op_types;
  // plan.recompute_unit; with kModule the plan checkpointed whole modules, plan.recompute_modules
  // (the module paths, in forward order), and simulated exactly torch.utils.checkpoint on each.
  // plan.checkpointable_modules: how many repeated blocks the model has (0 when a plan does not
  // say).
  RecomputeUnit recompute_unit = RecomputeUnit::kNode;
  std::vector<std::string> recompute_modules;
  int64_t checkpointable_modules = 0;
  // plan.recompute_reentrant (--recompute-reentrant): torch.utils.checkpoint(use_reentrant=True),
  // what the exports pass where they have the switch (HF's gradient_checkpointing_kwargs, the
  // scripts' checkpoint calls); torchtune's NO_REENTRANT wrapper has none and refuses. False
  // without module recompute.
  bool recompute_reentrant = false;
  // recompute_nodes grouped by module (not a JSON key): the planned modules for a module plan,
  // else each node's checkpoint module (CheckpointModuleForNode: more than the plan simulated).
  CheckpointModules checkpoints;

  std::vector<std::string> fp16_nodes;  // plan.fp16_ops (node names)
  std::vector<std::string> fp32_nodes;  // plan.fp32_ops
  // plan.attention.requested (eager in a plan written before --attention): the attention rewrite
  // the plan's node names belong to.
  AttentionMode attention = AttentionMode::kEager;

  // plan.parallel, plan.gpus, plan.nodes (--gpus): the data-parallel strategy the plan runs and
  // the engine defaults it was derived with; nullopt for a single-GPU plan.
  std::optional<DataParallelOptions> data_parallel;
  // plan.tensor_parallel (--tp): GPUs per model replica and the weights split column- and
  // row-parallel (parameter names, in graph order; analyzer/parallel/tensor_parallel.h). 1 and
  // empty without --tp.
  int64_t tensor_parallel = 1;
  std::vector<std::string> column_parallel;
  std::vector<std::string> row_parallel;
  // plan.offload.mode (--offload): what the plan keeps in pinned host memory. The exports write
  // it as the engine setting that does it or refuse (export_config.cc).
  OffloadMode offload = OffloadMode::kNone;
  // plan.offload.hooks (--offload-hooks, with --offload activations): whose saved_tensors_hooks
  // move the activations (save_on_cpu, torchtune's OffloadActivations with or without streams).
  OffloadHooks offload_hooks = OffloadHooks::kSaveOnCpu;
  // plan.optimizer_in_backward: torchtune's optimizer_in_bwd, which only the torchtune target has
  // a switch for (export_config.cc refuses it elsewhere).
  bool optimizer_in_backward = false;
  // plan.compile (--compile): the saved set of torch.compile's min-cut partitioner, which the run
  // must compile too (torchtune's compile: True, the Trainer's torch_compile=True, Accelerate's
  // dynamo_backend, model = torch.compile(model) in the scripts; DeepSpeed refuses).
  bool compile = false;
  // plan.alloc_conf (--alloc-conf, --allocator expandable): the PYTORCH_CUDA_ALLOC_CONF the plan
  // modelled, options that differ from PyTorch's defaults only ("" when none), which the scripts
  // set before importing torch and the config-only targets refuse.
  std::string alloc_conf;

  // model.parameter_count and plan.trainable_parameter_count: every parameter element, and those
  // the optimizer updates (fewer under --train/--freeze/--lora; 0 when a saved plan does not say).
  int64_t parameter_count = 0;
  int64_t trainable_parameter_count = 0;
  // plan.lora (--lora): the adapters simulated, as PEFT builds them; nullopt without LoRA.
  std::optional<LoraPlanReport> lora;
  // plan.base_dtype (--base-dtype): the frozen weights' storage; nullopt: the model's own dtype.
  // int8 and nf4 are bitsandbytes' quantised linear layers, loaded as such (BitsAndBytesConfig).
  std::optional<BaseDType> base_dtype;

  // bindings: every bound symbol, the batch included (in id order from the planner, in the
  // file's order from a saved plan).
  std::vector<DimBinding> bindings;
  // peak_bytes, breakdown, saved_activation_bytes, saved_activations_by_node: filled by the
  // planner's route; a saved plan's are read by MemoryResultFromPlanJson (baseline/).
  MemoryResult memory;

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
  bool ZeroGradSetsToNone() const { return zero_grad == ZeroGradMode::kSetToNone; }
  bool ModuleUnit() const { return recompute_unit == RecomputeUnit::kModule; }
  bool UsesRecompute() const { return !recompute_nodes.empty() || !recompute_modules.empty(); }
  // A module plan that checkpoints every repeated block: what HF's gradient_checkpointing runs.
  bool ChecksEveryModule() const {
    return ModuleUnit() && checkpointable_modules > 0 &&
           static_cast<int64_t>(recompute_modules.size()) == checkpointable_modules;
  }
  // A pure-regime plan whose loss ran in fp32: the loop upcasts the logits (the PyTorch loop
  // writes .float()).
  bool UpcastsLoss() const { return amp_mode == AmpMode::kPure && loss_dtype == DType::kFloat32; }
  // The loss ran on half logits (bf16 or fp16).
  bool HalfLoss() const { return loss_dtype == DType::kFloat16 || loss_dtype == DType::kBFloat16; }
};

// What a plan's facts are built from: the planner's result and the rewrites applied to the graph
// it planned (null: not applied).
struct PlanSources {
  std::string model_path;
  std::string model_name;
  const Graph* graph = nullptr;
  const PlannerOptions* options = nullptr;  // the chosen configuration's options
  const TrainingPlan* plan = nullptr;
  const AttentionPlan* attention = nullptr;
  const FusedLossPlan* fused_loss = nullptr;
  FusionSet fusions = FusionSet::kFusedOps;  // --fusions the graph was imported with
};

// The plan's facts, built once per analysis (AnalysisReport::plan_report).
// REQUIRES: graph, options and plan set.
PlanReport PlanReportOf(const PlanSources& sources);

// recompute_nodes grouped by module (PlanReport::checkpoints), from the other recompute fields.
CheckpointModules CheckpointsOf(const PlanReport& plan);

// The optimizer as reports name it: "adamw (foreach)", "sgd", "adamw8bit" (OptimizerLabel).
std::string OptimizerLabelOf(const PlanReport& plan);

}  // namespace memplan
