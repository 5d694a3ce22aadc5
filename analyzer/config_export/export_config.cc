#include "analyzer/config_export/export_config.h"

#include <cmath>

#include "analyzer/config_export/export_target.h"
#include "analyzer/config_export/exporters.h"
#include "analyzer/config_export/saved_plan_reader.h"
#include "analyzer/config_export/torchtune_lora_modules.h"

namespace memplan {
namespace {

Status ValidateOptions(const ExportOptions& options) {
  if (options.learning_rate &&
      (!std::isfinite(*options.learning_rate) || *options.learning_rate <= 0))
    return MakeError("export: the learning rate must be a positive number");
  if (!std::isfinite(options.max_grad_norm) || options.max_grad_norm < 0)
    return MakeError("export: the gradient-clipping norm must be >= 0 (0 disables clipping)");
  if (options.weight_decay && (!std::isfinite(*options.weight_decay) || *options.weight_decay < 0))
    return MakeError("export: the weight decay must be >= 0");
  if (options.sgd_momentum && (!std::isfinite(*options.sgd_momentum) || *options.sgd_momentum <= 0))
    return MakeError("export: the SGD momentum must be > 0 (the plan keeps a momentum buffer)");
  if (options.dataloader_num_workers < 0)
    return MakeError("export: the number of data-loader workers must be >= 0");
  return OkStatus();
}

// A config that runs another regime than the plan modelled would make the plan's memory figure
// wrong, so the export refuses and names the regimes the target can run.
Status CheckRegime(const PlanReport& plan, ExportTarget target) {
  std::optional<ParallelStrategy> strategy;
  if (plan.data_parallel) strategy = plan.data_parallel->strategy;
  if (!plan.amp_mode || ExportTargetRuns(target, *plan.amp_mode, strategy, plan.offload))
    return OkStatus();
  std::string supported;
  for (const NamedValue<AmpMode>& mode : kAmpModeNames)
    if (ExportTargetRuns(target, mode.value, strategy, plan.offload))
      supported += (supported.empty() ? "" : " or ") + std::string(mode.name);
  std::string why =
      strategy ? " under --parallel " + std::string(ParallelStrategyName(*strategy)) : "";
  if (OffloadsOptimizer(plan.offload) && target == ExportTarget::kAccelerate)
    why += " with --offload " + std::string(OffloadModeName(plan.offload)) +
           " (its DeepSpeed plugin keeps fp32 masters)";
  return MakeError("export: " + std::string(ExportTargetName(target)) + why +
                   " cannot express --amp-mode " + std::string(AmpModeName(*plan.amp_mode)) +
                   ", which the plan modelled; re-plan with --amp-mode " + supported);
}

// Likewise for --optimizer-impl, where the run could hold more than the plan: a for-loop Adam plan
// for the Trainer, whose optim names only foreach and fused (export_target.h).
Status CheckOptimizerImpl(const PlanReport& plan, ExportTarget target) {
  if (!plan.optimizer_impl) return OkStatus();
  std::optional<ParallelStrategy> strategy;
  if (plan.data_parallel) strategy = plan.data_parallel->strategy;
  if (ExportTargetRunsOptimizerImpl(target, plan.optimizer, *plan.optimizer_impl, strategy,
                                    plan.offload))
    return OkStatus();
  std::string supported;
  for (const NamedValue<OptimizerImpl>& impl : kOptimizerImplNames)
    if (ExportTargetRunsOptimizerImpl(target, plan.optimizer, impl.value, strategy, plan.offload))
      supported += (supported.empty() ? "" : " or ") + std::string(impl.name);
  const std::string why = " (TrainingArguments.optim has adamw_torch and adamw_torch_fused)";
  return MakeError("export: " + std::string(ExportTargetName(target)) + why +
                   " cannot express --optimizer-impl " +
                   std::string(OptimizerImplName(*plan.optimizer_impl)) +
                   ", which the plan modelled; re-plan with --optimizer-impl " + supported);
}

// Likewise for --offload: a config that keeps on the GPU what the plan put on the host would
// run out of the memory the plan freed.
Status CheckOffload(const PlanReport& plan, ExportTarget target) {
  // torchtune's OffloadActivations keeps what save_on_cpu would move (small tensors, parameters,
  // the output head) and runs around the model's forward only: only its recipes run it.
  if (plan.offload == OffloadMode::kActivations && IsTorchtuneHooks(plan.offload_hooks) &&
      target != ExportTarget::kTorchtune)
    return MakeError("export: " + std::string(ExportTargetName(target)) +
                     " cannot express --offload-hooks " +
                     std::string(OffloadHooksName(plan.offload_hooks)) +
                     " (torchtune's OffloadActivations), which the plan modelled; export with "
                     "--to torchtune");
  // Unsloth patches HF's checkpointing inside its own FastLanguageModel; no target sets it.
  if (plan.offload == OffloadMode::kActivations && plan.offload_hooks == OffloadHooks::kUnsloth)
    return MakeError("export: " + std::string(ExportTargetName(target)) +
                     " cannot express --offload-hooks unsloth (Unsloth's offloaded gradient "
                     "checkpointing), which the plan modelled; Unsloth is not an export target: "
                     "set use_gradient_checkpointing=\"unsloth\" in "
                     "FastLanguageModel.get_peft_model (max_seq_length >= 512)");
  if (ExportTargetOffloads(target, plan.offload)) return OkStatus();
  std::string supported;
  for (ExportTarget t : kAllExportTargets)
    if (ExportTargetOffloads(t, plan.offload))
      supported += (supported.empty() ? "" : " or ") + std::string(ExportTargetName(t));
  return MakeError("export: " + std::string(ExportTargetName(target)) +
                   " cannot express --offload " + std::string(OffloadModeName(plan.offload)) +
                   ", which the plan modelled; export with --to " + supported);
}

// --fused-loss: only the HF Trainer has a switch for Liger's fused linear cross entropy
// (TrainingArguments.use_liger_kernel, transformers >= 4.45); a config that runs the unfused loss
// would materialise the logits the plan left out.
Status CheckFusedLoss(const PlanReport& plan, ExportTarget target) {
  if (!plan.fused_loss || target == ExportTarget::kHfTrainer ||
      target == ExportTarget::kHfTrainerJson)
    return OkStatus();
  return MakeError("export: " + std::string(ExportTargetName(target)) +
                   " cannot express --fused-loss (Liger's fused linear cross entropy), which the "
                   "plan modelled; export with --to hf-trainer or hf-trainer-json "
                   "(use_liger_kernel=True), or re-plan without --fused-loss");
}

// --fusions liger: only the HF Trainer patches in Liger Kernel's RMSNorm, SwiGLU, GeGLU
// (TrainingArguments.use_liger_kernel); a run without them keeps the activations the plan left
// out (eager SiLU keeps silu(gate) for its product, eager RMSNorm its fp32 intermediates).
Status CheckLigerKernels(const PlanReport& plan, ExportTarget target) {
  if (plan.fusions != FusionSet::kLiger || target == ExportTarget::kHfTrainer ||
      target == ExportTarget::kHfTrainerJson)
    return OkStatus();
  return MakeError(
      "export: " + std::string(ExportTargetName(target)) +
      " cannot express --fusions liger (Liger Kernel's RMSNorm, SwiGLU and GeGLU), which the "
      "plan modelled; export with --to hf-trainer or hf-trainer-json "
      "(use_liger_kernel=True), or re-plan with --fusions ops");
}

// --alloc-conf (and --allocator expandable): the scripts set PYTORCH_CUDA_ALLOC_CONF before
// importing torch (AllocConfLines); the DeepSpeed JSON, the Accelerate YAML, the bare
// TrainingArguments JSON and torchtune's recipe YAML have no place for an environment variable,
// and a run without it would fragment as the plan did not model (the plan may fit only with it).
Status CheckAllocConf(const PlanReport& plan, ExportTarget target) {
  if (plan.alloc_conf.empty()) return OkStatus();
  if (target != ExportTarget::kDeepSpeed && target != ExportTarget::kAccelerate &&
      target != ExportTarget::kHfTrainerJson && target != ExportTarget::kTorchtune)
    return OkStatus();
  return MakeError("export: " + std::string(ExportTargetName(target)) +
                   " (a config file) cannot set PYTORCH_CUDA_ALLOC_CONF=" + plan.alloc_conf +
                   ", which the plan modelled; export with --to pytorch, lightning or hf-trainer, "
                   "whose scripts set it, or re-plan without --alloc-conf");
}

// --optimizer-in-backward: torchtune's optimizer_in_bwd (a post-accumulate-grad hook per
// parameter); no target but torchtune runs it, and a config stepping after backward would hold
// the full gradient set the plan left out.
Status CheckOptimizerInBackward(const PlanReport& plan, ExportTarget target) {
  if (!plan.optimizer_in_backward || target == ExportTarget::kTorchtune) return OkStatus();
  return MakeError("export: " + std::string(ExportTargetName(target)) +
                   " cannot express --optimizer-in-backward (torchtune's optimizer_in_bwd: "
                   "True), which the plan modelled; re-plan without it");
}

// --recompute-reentrant: torchtune wraps its layers with checkpoint_wrapper(NO_REENTRANT) and has
// no setting for the reentrant variant (torchtune/training/activations.py).
Status CheckRecomputeReentrant(const PlanReport& plan, ExportTarget target) {
  if (!plan.recompute_reentrant || target != ExportTarget::kTorchtune) return OkStatus();
  return MakeError(
      "export: torchtune cannot express --recompute-reentrant (its activation checkpointing is "
      "always NO_REENTRANT), which the plan modelled; re-plan without it");
}

// --compile: the plan holds the saved set torch.compile's partitioner keeps, which an eager run
// would exceed. DeepSpeed's JSON has no switch that compiles the model (engine.compile() is a
// call in the script; its "compile" section configures DeepCompile), so it refuses.
Status CheckCompile(const PlanReport& plan, ExportTarget target) {
  if (!plan.compile || target != ExportTarget::kDeepSpeed) return OkStatus();
  return MakeError(
      "export: deepspeed cannot express --compile (torch.compile is engine.compile() in the "
      "script, no ds_config key), which the plan modelled; export with --to accelerate, "
      "hf-trainer, pytorch, lightning or torchtune, or re-plan without it");
}

// --lora and --base-dtype change the model, which only a script builds: the hf-trainer-json
// output is a bare TrainingArguments object with no place for a LoraConfig or a
// BitsAndBytesConfig, so it refuses rather than train the full model in fp32. (The DeepSpeed
// and Accelerate files always go with a training script: they name what it must build.)
Status CheckFineTuning(const PlanReport& plan, ExportTarget target) {
  if (!plan.lora && !plan.base_dtype) return OkStatus();
  if (target != ExportTarget::kHfTrainerJson) return OkStatus();
  const std::string what =
      plan.lora ? "--lora " + std::to_string(plan.lora->rank) + " (PEFT's LoraConfig)"
                : "--base-dtype " + std::string(BaseDTypeName(*plan.base_dtype));
  return MakeError("export: hf-trainer-json (TrainingArguments fields only) cannot express " +
                   what +
                   ", which the plan modelled; export with --to hf-trainer, pytorch or "
                   "lightning, whose scripts build it");
}

// A ZeRO stage is DeepSpeed's engine: the PyTorch target writes a single-GPU loop or a torchrun
// DDP/FSDP script, and a single-GPU loop of a sharded plan holds every state on one GPU.
Status CheckPytorchStrategy(const PlanReport& plan, ExportTarget target) {
  if (!plan.data_parallel || target != ExportTarget::kPytorchLoop) return OkStatus();
  const ParallelStrategy s = plan.data_parallel->strategy;
  if (s != ParallelStrategy::kZero1 && s != ParallelStrategy::kZero2 &&
      s != ParallelStrategy::kZero3)
    return OkStatus();
  return MakeError(
      "export: pytorch (a single-GPU loop, or a torchrun script for ddp and fsdp) "
      "cannot express --parallel " +
      std::string(ParallelStrategyName(s)) +
      ", which the plan modelled; export with --to deepspeed (or hf-trainer, "
      "accelerate, lightning, which run DeepSpeed), or re-plan with --parallel fsdp "
      "for the torchrun script");
}

// The PyTorch target's FSDP2 script shards parameters as DTensors, and bitsandbytes' optimizers
// step plain tensors: torch has no sharding rule for bitsandbytes.optimizer_update_* (the run
// raises NotImplementedError at the first step; tools/run_exported_plans.py found it).
// torchtune's distributed recipes shard with the same fully_shard (training.shard_model).
Status CheckShardedOptimizer(const PlanReport& plan, ExportTarget target) {
  if (!plan.data_parallel || !IsFsdp(plan.data_parallel->strategy) ||
      (target != ExportTarget::kPytorchLoop && target != ExportTarget::kTorchtune))
    return OkStatus();
  if (plan.optimizer != OptimizerKind::kAdamW8bit &&
      plan.optimizer != OptimizerKind::kPagedAdamW8bit && plan.optimizer != OptimizerKind::kLion)
    return OkStatus();
  const bool torchtune = target == ExportTarget::kTorchtune;
  return MakeError(
      "export: " +
      std::string(torchtune ? "torchtune's distributed recipe" : "pytorch's FSDP2 script") +
      " cannot run --optimizer " + std::string(OptimizerKindName(plan.optimizer)) +
      " (bitsandbytes steps plain tensors, not FSDP2's DTensor shards), which the "
      "plan modelled; re-plan with " +
      (torchtune ? "--optimizer adamw" : "--parallel ddp, or with --optimizer adamw"));
}

// torchtune's recipes (torchtune 0.6) cannot run every plan; each refusal names what the recipe
// does instead, so a config that would not hold the plan's memory is never written.
Status CheckTorchtune(const PlanReport& plan, ExportTarget target) {
  if (target != ExportTarget::kTorchtune) return OkStatus();
  auto refuse = [](const std::string& what) { return MakeError("export: torchtune " + what); };
  if (plan.precision == Precision::kFp16)
    return refuse(
        "cannot express --precision fp16 (its recipes raise 'full fp16 training is not "
        "supported'); re-plan with --precision bf16 or fp32");
  if (plan.data_parallel) {
    const DataParallelOptions& dp = *plan.data_parallel;
    if (dp.strategy != ParallelStrategy::kFsdp)
      return refuse("cannot express --parallel " + std::string(ParallelStrategyName(dp.strategy)) +
                    " (its distributed recipes shard with FSDP2's fully_shard only); re-plan "
                    "with --parallel fsdp");
    if (!dp.fsdp_wrap_blocks)
      return refuse(
          "cannot express FSDP auto_wrap_policy=size (its recipes call fully_shard on every "
          "transformer layer); re-plan with --engine-options auto_wrap_policy=transformer");
  }
  if (plan.offload == OffloadMode::kOptimizerAndParams && !plan.data_parallel)
    return refuse(
        "cannot express --offload optimizer+params on one GPU (fsdp_cpu_offload is a "
        "distributed-recipe setting); re-plan with --gpus N --parallel fsdp, or export with --to "
        "deepspeed");
  if (plan.offload == OffloadMode::kActivations && !plan.UsesRecompute())
    return refuse(
        "cannot express --offload activations without recompute (its recipes raise unless "
        "enable_activation_checkpointing is True with enable_activation_offloading); re-plan "
        "with --recompute all");
  if (!plan.lora && plan.trainable_parameter_count > 0 &&
      plan.trainable_parameter_count < plan.parameter_count)
    return refuse(
        "cannot express a partly frozen model without LoRA (--train/--freeze: its full "
        "recipes train every parameter); re-plan without them, or with --lora");
  if (plan.lora && !config_export::TorchtuneLoraModulesOf(plan.lora->target_modules).AdaptsAny())
    return refuse("cannot express LoRA on " + plan.lora->target_modules.front() +
                  " (no lora_attn_modules, apply_lora_to_mlp or apply_lora_to_output switch names "
                  "these modules); re-plan with --lora-targets on the attention or MLP "
                  "projections");
  const std::string working(PrecisionName(plan.precision));
  if (plan.base_dtype && *plan.base_dtype != BaseDType::kNf4 &&
      BaseDTypeName(*plan.base_dtype) != working)
    return refuse("cannot express --base-dtype " + std::string(BaseDTypeName(*plan.base_dtype)) +
                  " (the recipes cast the model to dtype " + working +
                  "; QLoRA's base is nf4); re-plan with --base-dtype " + working + " or nf4");
  if (plan.optimizer_in_backward && plan.accumulation_steps > 1)
    return refuse(
        "cannot express --optimizer-in-backward with gradient accumulation (its recipes raise); "
        "re-plan with accumulation 1");
  // TransformerDecoder.unembed returns self.output(h).float() unless the output is chunked: the
  // unchunked loss always runs on fp32 logits, which a half-loss plan did not hold.
  if (plan.HalfLoss() && plan.loss_chunks == 0)
    return refuse(
        "upcasts unchunked logits to fp32 (TransformerDecoder.unembed: .float()), which the "
        "plan's half-precision loss did not hold; re-plan with --loss-dtype fp32, or with "
        "--loss-chunks 8 (CEWithChunkedOutputLoss)");
  return OkStatus();
}

// DeepSpeed has no hybrid-shard: ZeRO++ hpZ keeps a secondary parameter shard within the node
// but still partitions the optimizer state and gradients over every rank, a different plan.
Status CheckStrategy(const PlanReport& plan, ExportTarget target) {
  if (!plan.data_parallel || target != ExportTarget::kDeepSpeed ||
      !ShardsWithinNode(plan.data_parallel->strategy))
    return OkStatus();
  return MakeError(
      "export: deepspeed cannot express --parallel hybrid-shard (sharding within a node with "
      "replicas across nodes is PyTorch FSDP's; ZeRO++ hpZ still shards optimizer state over "
      "every rank); export with --to accelerate, lightning, hf-trainer or pytorch, or re-plan "
      "with --parallel zero3");
}

// Lightning's FSDPStrategy names the wrapped blocks by their class (auto_wrap_policy={Block}),
// which an ONNX graph does not carry; the other FSDP targets wrap blocks without it.
Status CheckWrapPolicy(const PlanReport& plan, ExportTarget target) {
  if (!plan.data_parallel || !IsFsdp(plan.data_parallel->strategy) ||
      !plan.data_parallel->fsdp_wrap_blocks || target != ExportTarget::kLightning)
    return OkStatus();
  return MakeError(
      "export: lightning cannot express the FSDP auto_wrap_policy=transformer the plan modelled "
      "(FSDPStrategy names the block class, which the model file does not carry); export with "
      "--to accelerate, hf-trainer or pytorch, or re-plan with auto_wrap_policy=size");
}

// --tp: DeepSpeed's AutoTP training ("tensor_parallel": {"autotp_size": T}, DeepSpeed >= 0.16.4)
// splits the same linear layers Megatron-style, with ZeRO stages 0 to 2. The other targets have
// no config switch that splits a model's layers (they need code: a DTensor parallelize_module
// plan per block, or a Megatron model), so they refuse rather than run replicated layers.
Status CheckTensorParallel(const PlanReport& plan, ExportTarget target) {
  if (plan.tensor_parallel <= 1) return OkStatus();
  const std::string tp = "--tp " + std::to_string(plan.tensor_parallel);
  if (target != ExportTarget::kDeepSpeed) {
    return MakeError("export: " + std::string(ExportTargetName(target)) + " cannot express " + tp +
                     " (tensor-parallel layers), which the plan modelled; export with --to "
                     "deepspeed (AutoTP training), or re-plan without --tp");
  }
  if (plan.data_parallel && plan.data_parallel->strategy != ParallelStrategy::kDdp &&
      plan.data_parallel->strategy != ParallelStrategy::kZero1 &&
      plan.data_parallel->strategy != ParallelStrategy::kZero2) {
    return MakeError("export: deepspeed runs " + tp +
                     " (AutoTP) with ZeRO stages 0 to 2 only, "
                     "not --parallel " +
                     std::string(ParallelStrategyName(plan.data_parallel->strategy)) +
                     "; re-plan with --parallel ddp, zero1 or zero2");
  }
  return OkStatus();
}

}  // namespace

Expected<std::string> ExportConfig(const nlohmann::json& plan_json, ExportTarget target,
                                   const ExportOptions& options) {
  MEMPLAN_RETURN_IF_ERROR(ValidateOptions(options));
  MEMPLAN_TRY(PlanReport plan, ReadExportPlan(plan_json));
  return ExportConfig(plan, target, options);
}

Expected<std::string> ExportConfig(const PlanReport& plan, ExportTarget target,
                                   const ExportOptions& options) {
  MEMPLAN_RETURN_IF_ERROR(ValidateOptions(options));
  MEMPLAN_RETURN_IF_ERROR(CheckStrategy(plan, target));
  MEMPLAN_RETURN_IF_ERROR(CheckPytorchStrategy(plan, target));
  MEMPLAN_RETURN_IF_ERROR(CheckRecomputeReentrant(plan, target));
  MEMPLAN_RETURN_IF_ERROR(CheckTorchtune(plan, target));
  MEMPLAN_RETURN_IF_ERROR(CheckFineTuning(plan, target));
  MEMPLAN_RETURN_IF_ERROR(CheckShardedOptimizer(plan, target));
  MEMPLAN_RETURN_IF_ERROR(CheckOffload(plan, target));
  MEMPLAN_RETURN_IF_ERROR(CheckRegime(plan, target));
  MEMPLAN_RETURN_IF_ERROR(CheckOptimizerImpl(plan, target));
  MEMPLAN_RETURN_IF_ERROR(CheckFusedLoss(plan, target));
  MEMPLAN_RETURN_IF_ERROR(CheckLigerKernels(plan, target));
  MEMPLAN_RETURN_IF_ERROR(CheckAllocConf(plan, target));
  MEMPLAN_RETURN_IF_ERROR(CheckOptimizerInBackward(plan, target));
  MEMPLAN_RETURN_IF_ERROR(CheckCompile(plan, target));
  MEMPLAN_RETURN_IF_ERROR(CheckWrapPolicy(plan, target));
  MEMPLAN_RETURN_IF_ERROR(CheckTensorParallel(plan, target));
  // A plan simulated without clipping exports without clipping: the clip's transient is not in
  // its memory figure.
  ExportOptions effective = options;
  if (!plan.ClipsGradients()) effective.max_grad_norm = 0;
  switch (target) {
    case ExportTarget::kDeepSpeed:
      return config_export::ExportDeepSpeed(plan, effective);
    case ExportTarget::kHfTrainer:
      return config_export::ExportHfTrainerPython(plan, effective);
    case ExportTarget::kHfTrainerJson:
      return config_export::ExportHfTrainerJson(plan, effective);
    case ExportTarget::kAccelerate:
      return config_export::ExportAccelerate(plan, effective);
    case ExportTarget::kLightning:
      return config_export::ExportLightning(plan, effective);
    case ExportTarget::kPytorchLoop:
      // ddp, fsdp and hybrid-shard plans run under torchrun (torchrun_export.cc).
      if (plan.data_parallel && (plan.data_parallel->strategy == ParallelStrategy::kDdp ||
                                 IsFsdp(plan.data_parallel->strategy)))
        return config_export::ExportTorchrunScript(plan, effective);
      return config_export::ExportPytorchLoop(plan, effective);
    case ExportTarget::kTorchtune:
      return config_export::ExportTorchtune(plan, effective);
  }
  MEMPLAN_UNREACHABLE("unhandled ExportTarget");
  return MakeError("unreachable");
}

}  // namespace memplan
