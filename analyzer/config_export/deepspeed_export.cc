// DeepSpeed config JSON. Only keys from DeepSpeed's configuration reference
// (deepspeed.ai/docs/config-json) are written, plus "_comment" and "_not_expressed", which
// DeepSpeedConfig ignores (it reads known keys and never rejects others).
//
// A DeepSpeed config cannot make a model recompute: its "activation_checkpointing" section only
// configures deepspeed.checkpointing.checkpoint, which the model's code must call. So the config
// does not pretend (no such section); "_not_expressed" says what the plan recomputes and what the
// model must do, and so do unset hyper-parameters (lr is left to the optimizer's default only
// where it has one: DeepSpeed's Adam; torch's SGD requires one and fails without it).

#include <optional>
#include <string>
#include <vector>

#include "analyzer/config_export/export_text.h"
#include "analyzer/config_export/exporters.h"
#include "analyzer/config_export/fine_tune_text.h"
#include "analyzer/vocabulary/enum_table.h"

namespace memplan::config_export {
namespace {

// DeepSpeed's dynamic loss scaler: loss_scale 0 selects dynamic scaling starting at
// 2^initial_scale_power, as torch.cuda.amp.GradScaler does with its default init_scale 65536.
// A static scale in the plan is exported as dynamic too: the scaler's memory is a few scalars
// either way, and dynamic scaling is what every framework recommends.
constexpr int kInitialScalePower = 16;
constexpr int kLossScaleWindow = 1000;  // overflow-free steps before the scale grows
constexpr int kHysteresis = 2;          // overflows tolerated before the scale shrinks
constexpr int kMinLossScale = 1;

// DeepSpeed has no config type for bitsandbytes' optimizers (or Lion): deepspeed.initialize
// asserts "<type> is not a supported DeepSpeed Optimizer" for a type it cannot find in
// torch.optim, and HF Trainer lets a config's optimizer section replace its own `optim`. So such
// a plan's config has no optimizer section and _not_expressed names the object to pass.
bool HasConfigOptimizer(const PlanReport& plan) {
  return plan.optimizer != OptimizerKind::kAdamW8bit &&
         plan.optimizer != OptimizerKind::kPagedAdamW8bit && plan.optimizer != OptimizerKind::kLion;
}

nlohmann::ordered_json OptimizerSection(const PlanReport& plan, const ExportOptions& options) {
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  if (options.learning_rate) params["lr"] = *options.learning_rate;
  std::string type;
  switch (plan.optimizer) {
    case OptimizerKind::kSgd:
    case OptimizerKind::kMomentum:
      // DeepSpeed instantiates non-native optimizers by name from torch.optim.
      type = "SGD";
      if (plan.optimizer == OptimizerKind::kSgd)
        params["momentum"] = 0.0;
      else if (options.sgd_momentum)
        params["momentum"] = *options.sgd_momentum;
      break;
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW:
      type = plan.optimizer == OptimizerKind::kAdam ? "Adam" : "AdamW";
      params["betas"] = {kAdamBeta1, kAdamBeta2};
      params["eps"] = kAdamEps;
      if (std::optional<double> decay = WrittenWeightDecay(plan, options))
        params["weight_decay"] = *decay;
      break;
    case OptimizerKind::kAdafactor:
      type = "Adafactor";  // torch.optim.Adafactor (torch >= 2.5), found by name as SGD is
      break;
    case OptimizerKind::kAdamW8bit:
    case OptimizerKind::kPagedAdamW8bit:
    case OptimizerKind::kLion:
      // No section (ClientOptimizer): callers check HasConfigOptimizer first.
      break;
  }
  nlohmann::ordered_json section;
  section["type"] = type;
  section["params"] = params;
  return section;
}

// ", with LEARNING_RATE = 0.001, WEIGHT_DECAY yours to set": the hyper-parameter constants
// TorchOptimizerCall names (HyperParameterConstants' assignments, their comments dropped).
std::string ConstantsClause(const PlanReport& plan, const ExportOptions& options) {
  std::string clause;
  const std::string lines = HyperParameterConstants(plan, options);
  size_t start = 0;
  while (start < lines.size()) {
    size_t end = lines.find('\n', start);
    if (end == std::string::npos) end = lines.size();
    std::string line = lines.substr(start, end - start);
    start = end + 1;
    if (line.empty() || line[0] == '#') continue;
    line = line.substr(0, line.find("  #"));
    const size_t none = line.find(" = None");
    if (none != std::string::npos) line = line.substr(0, none) + " yours to set";
    clause += (clause.empty() ? ", with " : ", ") + line;
  }
  return clause;
}

// What of the plan this config cannot carry, one sentence each (see the top of this file).
std::vector<std::string> NotExpressed(const PlanReport& plan, const ExportOptions& options) {
  std::vector<std::string> notes;
  if (plan.UsesRecompute()) {
    std::string modules;
    for (const CheckpointModule& m : plan.checkpoints.modules)
      modules += (modules.empty() ? "" : ", ") + m.module_path;
    for (const std::string& node : plan.checkpoints.unmapped_nodes)
      modules += (modules.empty() ? "" : ", ") + ("node " + node);
    notes.push_back(
        "recompute: the plan recomputes " + std::to_string(plan.recompute_nodes.size()) +
        " nodes in " + modules +
        "; a DeepSpeed config cannot make the model recompute them. Wrap those modules in "
        "deepspeed.checkpointing.checkpoint or torch.utils.checkpoint.checkpoint in the model (" +
        ExportCommand(options, "pytorch") +
        " writes enable_recompute(model)); without it the "
        "run keeps every activation and needs more memory than planned.");
  }
  if (!HasConfigOptimizer(plan)) {
    notes.push_back(
        "optimizer: DeepSpeed's config has no type for the plan's " +
        std::string(OptimizerKindName(plan.optimizer)) +
        ", so this config has no optimizer section: build it in the script and pass it, "
        "deepspeed.initialize(model=model, optimizer=" +
        TorchOptimizerCall(plan, options, "[p for p in model.parameters() if p.requires_grad]") +
        ", config=...)" + ConstantsClause(plan, options) +
        " (HF Trainer builds it from its optim).");
  } else if (!options.learning_rate) {
    notes.push_back(
        "optimizer.params.lr: yours to set (the plan does not decide it); without "
        "it the optimizer's own default applies.");
  }
  if (plan.offload == OffloadMode::kActivations)
    notes.push_back(
        "offload activations: the plan copies every tensor saved for backward to pinned host "
        "memory (torch.autograd.graph.save_on_cpu(pin_memory=True)); a DeepSpeed config cannot. "
        "Run the model's forward and loss inside `with "
        "torch.autograd.graph.save_on_cpu(pin_memory=True):` (" +
        ExportCommand(options, "pytorch") +
        " writes it); without it the run keeps every saved activation on the GPU.");
  // DeepSpeed builds FusedAdam: no step intermediate. A plan made with torch's foreach or
  // for-loop Adam counted one, so it over-estimates this run (never under-estimates it).
  if ((plan.optimizer == OptimizerKind::kAdam || plan.optimizer == OptimizerKind::kAdamW) &&
      plan.optimizer_impl && *plan.optimizer_impl != OptimizerImpl::kFused &&
      !OffloadsOptimizer(plan.offload))
    notes.push_back("optimizer: the plan modelled torch.optim's " +
                    std::string(OptimizerImplName(*plan.optimizer_impl)) +
                    " Adam, whose step holds intermediates (sqrt(exp_avg_sq) or its for-loop "
                    "peak); DeepSpeed's FusedAdam holds none, so this run peaks lower than "
                    "planned at the optimizer step (plan with --optimizer-impl fused for the "
                    "exact figure).");
  if (HasFineTuning(plan))
    notes.push_back(FineTuneScriptSentence(plan, ExportCommand(options, "pytorch")));
  if (plan.optimizer == OptimizerKind::kMomentum && !options.sgd_momentum)
    notes.push_back(
        "optimizer.params.momentum: yours to set, > 0 (the plan keeps a momentum "
        "buffer; torch.optim.SGD's default 0 keeps none).");
  return notes;
}

// DeepSpeed's ZeRO stage for a data-parallel strategy. FSDP's full sharding is ZeRO-3's; DDP is
// stage 0 (DeepSpeed's own data parallelism, gradients all-reduced whole).
constexpr EnumTable<ParallelStrategy, int, 6> kZeroStages = {{
    {ParallelStrategy::kDdp, 0},
    {ParallelStrategy::kZero1, 1},
    {ParallelStrategy::kZero2, 2},
    {ParallelStrategy::kZero3, 3},
    {ParallelStrategy::kFsdp, 3},
    {ParallelStrategy::kHybridShard, 3},  // refused before rendering (export_config.cc)
}};
static_assert(ListsEvery(kZeroStages, kParallelStrategyNames));

// zero_optimization with the engine settings the per-rank program was derived with
// (analyzer/parallel/data_parallel_options.h), so the engine runs what was simulated.
nlohmann::ordered_json ZeroSection(const DataParallelOptions& dp) {
  const int stage = ValueOf(kZeroStages, dp.strategy);
  nlohmann::ordered_json zero;
  zero["stage"] = stage;
  if (stage >= 1) {
    zero["reduce_bucket_size"] = dp.zero_reduce_bucket_elements;
    zero["allgather_bucket_size"] = dp.zero_allgather_bucket_elements;
    zero["overlap_comm"] = true;
    zero["contiguous_gradients"] = true;
  }
  if (stage == 3) {
    zero["stage3_param_persistence_threshold"] = dp.zero3_param_persistence_threshold;
    zero["stage3_prefetch_bucket_size"] = dp.zero3_prefetch_bucket_elements;
    zero["stage3_max_live_parameters"] = dp.zero3_max_live_parameters;
  }
  return zero;
}

// ZeRO's offload sections for --offload optimizer / optimizer+params, pinned host memory as the
// plan counts it (offload_param is valid only with stage 3).
void AddOffload(OffloadMode offload, nlohmann::ordered_json& zero) {
  if (!OffloadsOptimizer(offload)) return;
  const nlohmann::ordered_json cpu = {{"device", "cpu"}, {"pin_memory", true}};
  zero["offload_optimizer"] = cpu;
  if (offload == OffloadMode::kOptimizerAndParams) zero["offload_param"] = cpu;
}

// One GPU with --offload optimizer(+params): DeepSpeed offloads only under ZeRO. ZeRO-Offload is
// stage 2 with offload_optimizer (offload_param needs stage 3); partitioning over one rank
// changes nothing else. contiguous_gradients and overlap_comm are off: on, they allocate reduce
// buckets of reduce_bucket_size elements (5e8 by default, two with overlap_comm) that the
// single-GPU plan does not hold. Stage 3 keeps no parameter whole
// (stage3_param_persistence_threshold 0) and releases each after use
// (stage3_max_reuse_distance 0), as the plan offloads and refetches every unit.
nlohmann::ordered_json SingleGpuOffloadSection(OffloadMode offload) {
  const bool params = offload == OffloadMode::kOptimizerAndParams;
  nlohmann::ordered_json zero;
  zero["stage"] = params ? 3 : 2;
  AddOffload(offload, zero);
  zero["contiguous_gradients"] = false;
  zero["overlap_comm"] = false;
  if (params) {
    zero["stage3_param_persistence_threshold"] = 0;
    zero["stage3_max_reuse_distance"] = 0;
  }
  return zero;
}

}  // namespace

std::string ExportDeepSpeed(const PlanReport& plan, const ExportOptions& options) {
  nlohmann::ordered_json config;
  std::string comment = ProvenanceSentence(plan, options);
  if (plan.Gpus() > 1) {
    comment +=
        " Launch: deepspeed --num_gpus " + std::to_string(plan.Gpus() / plan.Nodes()) +
        (plan.Nodes() > 1 ? " --num_nodes " + std::to_string(plan.Nodes()) + " --hostfile hostfile"
                          : std::string()) +
        " train.py --deepspeed ds_config.json";
  }
  if (OffloadsOptimizer(plan.offload) && !plan.data_parallel) {
    comment += " --offload " + std::string(OffloadModeName(plan.offload)) +
               " on one GPU: ZeRO stage " +
               (plan.offload == OffloadMode::kOptimizerAndParams ? "3" : "2") +
               " with the optimizer step on the CPU (launch with deepspeed --num_gpus 1).";
  }
  config["_comment"] = comment;
  config["train_batch_size"] = plan.SamplesPerStep();  // micro * accumulation * GPUs
  config["train_micro_batch_size_per_gpu"] = plan.micro_batch;
  config["gradient_accumulation_steps"] = plan.accumulation_steps;
  config["gradient_clipping"] = options.max_grad_norm;  // 0.0 disables clipping in DeepSpeed
  if (HasConfigOptimizer(plan)) config["optimizer"] = OptimizerSection(plan, options);
  if (plan.tensor_parallel > 1) {
    // AutoTP training (DeepSpeed >= 0.16.4): each linear layer of the blocks split over
    // autotp_size GPUs, as the plan's column- and row-parallel layers are.
    config["tensor_parallel"]["autotp_size"] = plan.tensor_parallel;
  }
  if (plan.data_parallel) {
    config["zero_optimization"] = ZeroSection(*plan.data_parallel);
    AddOffload(plan.offload, config["zero_optimization"]);
  } else if (OffloadsOptimizer(plan.offload)) {
    config["zero_optimization"] = SingleGpuOffloadSection(plan.offload);
  }
  // ZeRO steps an optimizer it does not list (bitsandbytes', Lion) only with this key: without
  // it deepspeed.initialize(optimizer=...) asserts "You are using an untested ZeRO Optimizer"
  // (runtime/engine.py, _do_optimizer_sanity_check). HF Trainer and accelerate add it for the
  // optimizers they build; a script passing the optimizer _not_expressed names reads it here.
  if (!HasConfigOptimizer(plan) && config.contains("zero_optimization") &&
      config["zero_optimization"]["stage"].get<int>() >= 1)
    config["zero_allow_untested_optimizer"] = true;
  if (plan.precision == Precision::kFp16) {
    nlohmann::ordered_json fp16;
    fp16["enabled"] = true;
    fp16["loss_scale"] = 0;
    fp16["initial_scale_power"] = kInitialScalePower;
    fp16["loss_scale_window"] = kLossScaleWindow;
    fp16["hysteresis"] = kHysteresis;
    fp16["min_loss_scale"] = kMinLossScale;
    config["fp16"] = fp16;
  } else if (plan.precision == Precision::kBf16) {
    config["bf16"] = {{"enabled", true}};
  }
  const std::vector<std::string> not_expressed = NotExpressed(plan, options);
  if (!not_expressed.empty()) config["_not_expressed"] = not_expressed;
  return config.dump(2) + "\n";
}

}  // namespace memplan::config_export
