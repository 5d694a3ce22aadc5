#pragma once
// The training frameworks `memplan export` writes a configuration for. Each target turns the same
// plan (micro-batch, accumulation steps, precision, recompute modules, optimizer) into the
// settings that framework reads; docs/config_export.md shows every output.

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "analyzer/vocabulary/amp_mode.h"
#include "analyzer/vocabulary/enum_table.h"
#include "analyzer/vocabulary/name_table.h"
#include "analyzer/vocabulary/offload_mode.h"
#include "analyzer/vocabulary/optimizer_impl.h"
#include "analyzer/vocabulary/optimizer_kind.h"
#include "analyzer/vocabulary/parallel_strategy.h"
#include "graph/expected.h"

namespace memplan {

// ExportTargetName is the CLI spelling; the last column the file name a user would save the
// output as (ExportTargetDefaultFileName).
#define MEMPLAN_EXPORT_TARGETS(X)                                           \
  X(kDeepSpeed, "deepspeed", "ds_config.json") /* DeepSpeed config JSON */  \
  /* Python: transformers.TrainingArguments(...) */                         \
  X(kHfTrainer, "hf-trainer", "training_args.py")                           \
  /* JSON of TrainingArguments fields (HfArgumentParser.parse_json_file) */ \
  X(kHfTrainerJson, "hf-trainer-json", "training_args.json")                \
  /* accelerate config YAML (accelerate launch --config_file) */            \
  X(kAccelerate, "accelerate", "accelerate_config.yaml")                    \
  /* Python: lightning Trainer(...) arguments */                            \
  X(kLightning, "lightning", "lightning_trainer.py")                        \
  /* Python: a plain PyTorch training loop */                               \
  X(kPytorchLoop, "pytorch", "train_loop.py")                               \
  /* torchtune recipe config YAML (tune run RECIPE --config FILE) */        \
  X(kTorchtune, "torchtune", "torchtune_config.yaml")
MEMPLAN_NAMED_ENUM(ExportTarget, MEMPLAN_EXPORT_TARGETS);

inline constexpr std::array<ExportTarget, kExportTargetNames.size()> kAllExportTargets =
    ValuesOf(kExportTargetNames);

// Inverse of ExportTargetName; the error lists the accepted names.
Expected<ExportTarget> ParseExportTarget(std::string_view name);

// The file name a user would save the output as ("ds_config.json", "train_loop.py", ...), for
// help texts and docs: the last column of MEMPLAN_EXPORT_TARGETS.
inline constexpr auto kExportTargetFileNames =
    MEMPLAN_ENUM_COLUMN(ExportTarget, MEMPLAN_EXPORT_TARGETS, std::string_view);
inline std::string_view ExportTargetDefaultFileName(ExportTarget target) {
  return ValueOf(kExportTargetFileNames, target);
}

// Which mixed-precision regimes a framework's configuration can express: DeepSpeed's fp16/bf16
// sections keep half parameters with fp32 masters; the Trainer, Accelerate and Lightning's
// "-mixed" precisions run torch.autocast on fp32 parameters; Lightning's "-true" precisions and
// a plain loop's model.to(dtype) run pure half parameters. A ZeRO strategy runs DeepSpeed's
// engine whichever framework launches it (Trainer's deepspeed=, Accelerate's DEEPSPEED,
// Lightning's deepspeed_stage_N), so only master-weights; Accelerate runs an optimizer offload
// through its DeepSpeed plugin, so with one it runs DeepSpeed's regime too. The PyTorch target's
// FSDP2 script (fsdp, hybrid-shard) also runs master-weights: MixedPrecisionPolicy(param_dtype=
// half) gathers half copies of fp32 sharded parameters. torchtune's recipes cast the model to
// `dtype` (training.get_dtype: bf16 or fp32; fp16 is refused by the recipes) and keep no fp32
// masters: pure only.
bool ExportTargetRuns(ExportTarget target, AmpMode mode,
                      std::optional<ParallelStrategy> strategy = std::nullopt,
                      OffloadMode offload = OffloadMode::kNone);

// The regime a plan for `target` (under `strategy` and `offload`) is made in when --amp-mode is
// not given: autocast where the target runs it, else master-weights, else pure (torchtune).
AmpMode ExportTargetDefaultAmpMode(ExportTarget target,
                                   std::optional<ParallelStrategy> strategy = std::nullopt,
                                   OffloadMode offload = OffloadMode::kNone);

// The torch.optim implementation (--optimizer-impl) a target's config runs for `optimizer`
// whatever the plan says, or nullopt where the config constructs the one the plan names (the
// Python targets write foreach= / fused=). The DeepSpeed config's optimizer section builds
// DeepSpeed's FusedAdam for Adam and AdamW, and so does the Trainer's deepspeed= under a ZeRO
// strategy (it points at that config): fused. With an optimizer offload the step is DeepSpeed's
// CPU Adam, which holds nothing on the GPU: fused too.
std::optional<OptimizerImpl> ExportTargetFixedOptimizerImpl(
    ExportTarget target, OptimizerKind optimizer,
    std::optional<ParallelStrategy> strategy = std::nullopt,
    OffloadMode offload = OffloadMode::kNone);

// Whether a config for `target` runs a plan made with `impl` within the plan's memory. A fused
// step holds no intermediate, so a target that runs fused runs every plan (a foreach or for-loop
// plan over-estimates it; the DeepSpeed export says by how much). TrainingArguments.optim names
// adamw_torch (foreach, torch's default) and adamw_torch_fused but no for-loop, and foreach can
// hold more than for-loop: a for-loop Adam plan is refused there. SGD's implementations differ
// in memory only with weight decay, which plans do not model: every target runs each of them.
bool ExportTargetRunsOptimizerImpl(ExportTarget target, OptimizerKind optimizer, OptimizerImpl impl,
                                   std::optional<ParallelStrategy> strategy = std::nullopt,
                                   OffloadMode offload = OffloadMode::kNone);

// The implementation a plan for `target` is made with when --optimizer-impl is not given: the
// fixed one where the target has one, else kDefaultCliOptimizerImpl (foreach).
OptimizerImpl ExportTargetDefaultOptimizerImpl(
    ExportTarget target, OptimizerKind optimizer,
    std::optional<ParallelStrategy> strategy = std::nullopt,
    OffloadMode offload = OffloadMode::kNone);

// Which --offload modes a target carries: the optimizer modes are DeepSpeed's offload_optimizer
// and offload_param (also through Accelerate's DeepSpeed plugin); activations is
// torch.autograd.graph.save_on_cpu around the forward, which the PyTorch loop writes and the
// DeepSpeed and Accelerate outputs name as the script line to add. The Trainer and Lightning
// argument lists have no setting for either. torchtune has enable_activation_offloading
// (activations) and, in its distributed recipes, fsdp_cpu_offload (FSDP2's CPUOffloadPolicy:
// parameters, gradients and optimizer state on the host, the step on the CPU:
// optimizer+params; torchtune_export.cc refuses it without FSDP).
bool ExportTargetOffloads(ExportTarget target, OffloadMode offload);

}  // namespace memplan
