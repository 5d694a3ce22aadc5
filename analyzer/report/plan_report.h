#pragma once
// The typed facts of an analysed plan that the verbs after `analyze` consume: `export` (the
// framework configuration), `baseline` / `check` (the memory result) and `verify` (the program to
// run). Inside one process they read this struct; JSON appears only where a plan crosses the
// process boundary (`analyze --json` writes these facts under the memplan/1 keys, and the readers
// of a saved plan file parse them back), so the in-process and the file route cannot differ: the
// tests compare the two.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/baseline/memory_result.h"
#include "analyzer/parallel/data_parallel_options.h"
#include "analyzer/program/loss_scaling.h"
#include "analyzer/report/analysis_report.h"
#include "analyzer/report/lora_plan_report.h"
#include "analyzer/vocabulary/amp_mode.h"
#include "analyzer/vocabulary/base_dtype.h"
#include "analyzer/vocabulary/loss_kind.h"
#include "analyzer/vocabulary/offload_hooks.h"
#include "analyzer/vocabulary/offload_mode.h"
#include "analyzer/vocabulary/optimizer_impl.h"
#include "analyzer/vocabulary/optimizer_kind.h"
#include "analyzer/vocabulary/precision.h"
#include "analyzer/vocabulary/recompute_unit.h"
#include "analyzer/vocabulary/zero_grad_mode.h"
#include "graph/symbols.h"

namespace memplan {

struct PlanReport {
  std::string model_path;  // memplan/1 model.path
  std::string model_name;  // model.name
  // plan.*
  int64_t micro_batch = 1;
  int64_t accumulation_steps = 1;
  Precision precision = Precision::kFp32;
  AmpMode amp_mode = AmpMode::kMasterWeights;  // plan.amp_mode (mixed precision only)
  OptimizerKind optimizer = OptimizerKind::kAdam;
  // plan.optimizer_impl (written for torch.optim's classes only)
  OptimizerImpl optimizer_impl = OptimizerImpl::kFused;
  LossKind loss = LossKind::kAuto;  // resolved in a derived plan
  ZeroGradMode zero_grad = ZeroGradMode::kSetToNone;
  bool clip_gradients = false;
  LossScalingMode loss_scaling = LossScalingMode::kNone;
  std::vector<std::string> recompute_nodes;  // plan.recompute, in plan order
  // plan.recompute_op_types: the op type of each of them whose name does not end in it.
  std::map<std::string, std::string> recompute_op_types;
  // plan.recompute_unit, plan.recompute_modules (module unit: the module paths checkpointed, in
  // forward order), plan.checkpointable_modules (the repeated blocks the model has).
  RecomputeUnit recompute_unit = RecomputeUnit::kNode;
  std::vector<std::string> recompute_modules;
  int64_t checkpointable_modules = 0;
  std::vector<std::string> fp16_nodes;  // plan.fp16_ops
  std::vector<std::string> fp32_nodes;  // plan.fp32_ops
  std::vector<DimBinding>
      bindings;  // bindings: every bound symbol, the batch included, in id order
  // peak_bytes, breakdown, saved_activation_bytes, saved_activations_by_node
  MemoryResult memory;
  // plan.parallel, plan.gpus, plan.nodes (--gpus): the strategy the plan runs and the engine
  // defaults it was derived with; nullopt for a single-GPU plan.
  std::optional<DataParallelOptions> data_parallel;
  // plan.tensor_parallel (--tp): the ranks of one model replica and the linear layers split
  // column- and row-parallel (analyzer/parallel/tensor_parallel.h); degree 1 without --tp.
  int64_t tensor_parallel = 1;
  std::vector<std::string> column_parallel;
  std::vector<std::string> row_parallel;
  // plan.offload.mode (--offload): what the plan keeps in host memory.
  OffloadMode offload = OffloadMode::kNone;
  // plan.offload.hooks (--offload-hooks, with --offload activations): whose saved_tensors_hooks
  // move the activations (save_on_cpu, torchtune's OffloadActivations with or without streams).
  OffloadHooks offload_hooks = OffloadHooks::kSaveOnCpu;
  // plan.fused_loss (--fused-loss): the LM head and cross entropy run as Liger's fused linear
  // cross entropy (analyzer/derivation/fused_loss_plan.h); `loss` then says cross_entropy.
  bool fused_loss = false;
  // plan.alloc_conf (--alloc-conf, --allocator expandable): the PYTORCH_CUDA_ALLOC_CONF the plan
  // modelled, options that differ from PyTorch's defaults only ("" when none); the exports set it.
  std::string alloc_conf;
  // plan.loss_dtype (--loss-dtype, resolved): the dtype the loss computed in ("fp32", "bf16",
  // "fp16"; kUndefined for a plan without a loss step). plan.loss_chunks (--loss-chunks;
  // 0 = unchunked) and plan.optimizer_in_backward (--optimizer-in-backward).
  DType loss_dtype = DType::kUndefined;
  int64_t loss_chunks = 0;
  bool optimizer_in_backward = false;
  // plan.compile (--compile): the saved set of torch.compile's min-cut partitioner.
  bool compile = false;
  // plan.recompute_reentrant (--recompute-reentrant): the checkpointed modules run
  // torch.utils.checkpoint(use_reentrant=True); false without module recompute.
  bool recompute_reentrant = false;
  // model.parameter_count and plan.trainable_parameter_count: every parameter element, and those
  // the optimizer updates (fewer under --train/--freeze/--lora).
  int64_t parameter_count = 0;
  int64_t trainable_parameter_count = 0;
  // plan.lora (--lora): the adapters simulated, as PEFT builds them; nullopt without LoRA.
  std::optional<LoraPlanReport> lora;
  // plan.base_dtype (--base-dtype): how the frozen weights are stored; nullopt: as the model.
  std::optional<BaseDType> base_dtype;
};

// The report's facts. REQUIRES: `report` points at its graph, options and plan.
PlanReport PlanReportOf(const AnalysisReport& report);

}  // namespace memplan
