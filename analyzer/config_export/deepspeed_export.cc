// DeepSpeed config JSON. Only keys from DeepSpeed's configuration reference
// (deepspeed.ai/docs/config-json) are written, plus "_comment", which DeepSpeedConfig ignores
// (it reads known keys and never rejects others).

#include "analyzer/config_export/export_text.h"
#include "analyzer/config_export/exporters.h"

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

nlohmann::ordered_json OptimizerSection(const ExportPlan& plan, const ExportOptions& options) {
  nlohmann::ordered_json params;
  params["lr"] = options.learning_rate;
  std::string type;
  switch (plan.optimizer) {
    case OptimizerKind::kSgd:
    case OptimizerKind::kMomentum:
      // DeepSpeed instantiates non-native optimizers by name from torch.optim.
      type = "SGD";
      params["momentum"] = plan.optimizer == OptimizerKind::kSgd ? 0.0 : options.sgd_momentum;
      break;
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW:
      type = plan.optimizer == OptimizerKind::kAdam ? "Adam" : "AdamW";
      params["betas"] = {kAdamBeta1, kAdamBeta2};
      params["eps"] = kAdamEps;
      params["weight_decay"] = EffectiveWeightDecay(plan, options);
      break;
    case OptimizerKind::kAdafactor:
      type = "Adafactor";  // torch.optim.Adafactor (torch >= 2.5), found by name as SGD is
      break;
  }
  nlohmann::ordered_json section;
  section["type"] = type;
  section["params"] = params;
  return section;
}

}  // namespace

std::string ExportDeepSpeed(const ExportPlan& plan, const ExportOptions& options) {
  nlohmann::ordered_json config;
  config["_comment"] = ProvenanceSentence(plan, options);
  config["train_batch_size"] = plan.SamplesPerStep();  // micro * accumulation * 1 GPU
  config["train_micro_batch_size_per_gpu"] = plan.micro_batch;
  config["gradient_accumulation_steps"] = plan.accumulation_steps;
  config["gradient_clipping"] = options.max_grad_norm;  // 0.0 disables clipping in DeepSpeed
  config["optimizer"] = OptimizerSection(plan, options);
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
  if (plan.UsesRecompute()) {
    // DeepSpeed's activation checkpointing is applied by the model code calling
    // deepspeed.checkpointing.checkpoint on the planned modules (see the pytorch export for the
    // module list); this section only configures it for one GPU.
    nlohmann::ordered_json checkpointing;
    checkpointing["partition_activations"] = false;
    checkpointing["cpu_checkpointing"] = false;
    checkpointing["contiguous_memory_optimization"] = false;
    checkpointing["number_checkpoints"] = plan.checkpoints.SegmentCount();
    config["activation_checkpointing"] = checkpointing;
  }
  return config.dump(2) + "\n";
}

}  // namespace memplan::config_export
