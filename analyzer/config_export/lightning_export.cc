// Lightning Trainer arguments (Lightning >= 2.0 precision names: "16-mixed", "bf16-mixed",
// "32-true"), and the plan's optimizer as make_optimizer(params) for the LightningModule's
// configure_optimizers: Lightning takes the optimizer from the module, not the Trainer, and the
// plan's memory depends on it (its state). Clipping is a Trainer argument.
//
// On N ranks: devices per machine, num_nodes, and the strategy the per-rank program was derived
// with: "ddp", FSDPStrategy (FULL_SHARD or SHARD_GRAD_OP, size-based wrapping at the plan's unit
// size) or Lightning's registered "deepspeed_stage_1/2/3" (DeepSpeed's engine: its fp16/bf16
// sections keep fp32 masters, which is why a ZeRO plan must be --amp-mode master-weights).

#include "analyzer/config_export/export_text.h"
#include "analyzer/config_export/exporters.h"
#include "analyzer/config_export/fine_tune_text.h"

namespace memplan::config_export {
namespace {

std::string LightningPrecision(Precision precision, std::optional<AmpMode> mode) {
  // "-true": the model's parameters themselves in half (--amp-mode pure).
  const bool pure = mode == AmpMode::kPure;
  switch (precision) {
    case Precision::kFp32:
      return "32-true";
    case Precision::kFp16:
      return pure ? "16-true" : "16-mixed";
    case Precision::kBf16:
      return pure ? "bf16-true" : "bf16-mixed";
  }
  return "32-true";
}

// The Trainer's strategy= value for a data-parallel plan; empty for one GPU.
std::string LightningStrategy(const PlanReport& plan) {
  if (!plan.data_parallel) return "";
  const DataParallelOptions& dp = *plan.data_parallel;
  switch (dp.strategy) {
    case ParallelStrategy::kDdp:
      return PythonString("ddp");
    case ParallelStrategy::kZero1:
      return PythonString("deepspeed_stage_1");
    case ParallelStrategy::kZero2:
      return PythonString("deepspeed_stage_2");
    case ParallelStrategy::kZero3:
      return PythonString("deepspeed_stage_3");
    case ParallelStrategy::kFsdp:
    case ParallelStrategy::kHybridShard:
      return std::string("FSDPStrategy(\n") +
             "        sharding_strategy=" + PythonString(FsdpShardingStrategy(dp)) + ",\n" +
             "        auto_wrap_policy=functools.partial(size_based_auto_wrap_policy, " +
             "min_num_params=" + std::to_string(dp.fsdp_min_unit_parameters) + "),\n" + "    )";
  }
  return "";
}

}  // namespace

std::string ExportLightning(const PlanReport& plan, const ExportOptions& options) {
  std::string out = "# " + ProvenanceSentence(plan, options) + "\n";
  out +=
      "# Lightning steps the optimizer every accumulate_grad_batches batches; the DataLoader's\n";
  out += "# batch_size is the micro-batch. \"16-mixed\" uses autocast with a dynamic GradScaler.\n";
  out += RecomputeModuleComment(
      plan,
      "Recompute is not a Trainer argument: in your LightningModule, wrap these submodules in\n"
      "# torch.utils.checkpoint.checkpoint" +
          std::string(plan.recompute_reentrant ? "(use_reentrant=True)" : "") + " (`" +
          ExportCommand(options, "pytorch") + "` writes\n# enable_recompute(model) for them):");
  const bool fsdp = plan.data_parallel && IsFsdp(plan.data_parallel->strategy);
  if (plan.data_parallel) {
    out += "# " + std::to_string(plan.Gpus()) + " GPUs: " + std::to_string(plan.SamplesPerStep()) +
           " samples per optimizer step (micro-batch x accumulation x GPUs). Launch: python\n" +
           "# train.py (Lightning starts one process per device)" +
           (plan.Nodes() > 1 ? "; on each of the " + std::to_string(plan.Nodes()) +
                                   " machines, with MASTER_ADDR,\n# MASTER_PORT and NODE_RANK set"
                             : std::string()) +
           ".\n";
  }
  if (fsdp) out += "import functools\n\n";
  out += AllocConfLines(plan);
  out += "import lightning.pytorch as pl  # Lightning < 2.0: import pytorch_lightning as pl\n";
  out += "import torch\n";
  out += "from torch.utils.data import DataLoader\n";
  out += FineTuneImports(plan);
  if (fsdp) {
    out += "from lightning.pytorch.strategies import FSDPStrategy\n";
    out += "from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy\n";
  }
  out += "\n";
  out += "MICRO_BATCH = " + std::to_string(plan.micro_batch) + "\n";
  out += HyperParameterConstants(plan, options);
  out += "\n\n";
  out += FineTuneSection(plan);
  out += "# In your LightningModule:\n";
  if (HasFineTuning(plan)) {
    out += "#     def __init__(self, model):\n";
    out += "#         super().__init__()\n";
    out += "#         self.model = apply_fine_tuning(model)  # the planned adapters and base\n";
  }
  out += "#     def configure_optimizers(self):\n";
  out += "#         return make_optimizer(self.parameters())\n";
  out += MakeOptimizerFunction(plan, options);
  out += "\n\n";
  // --compile: Lightning >= 2.0 fits a torch.compile'd LightningModule as it is; no Trainer
  // argument compiles it.
  if (plan.compile)
    out +=
        "# Planned with --compile: fit the compiled module, "
        "trainer.fit(torch.compile(module), ...).\n";
  out += "trainer = pl.Trainer(\n";
  out += "    accelerator=\"gpu\",\n";
  out += "    devices=" + std::to_string(plan.Gpus() / plan.Nodes()) + ",\n";
  if (plan.data_parallel) {
    out += "    num_nodes=" + std::to_string(plan.Nodes()) + ",\n";
    out += "    strategy=" + LightningStrategy(plan) + ",\n";
  }
  out += "    precision=" + PythonString(LightningPrecision(plan.precision, plan.amp_mode)) + ",\n";
  out += "    accumulate_grad_batches=" + std::to_string(plan.accumulation_steps) + ",\n";
  if (options.max_grad_norm > 0) {
    out += "    gradient_clip_val=" + PythonFloat(options.max_grad_norm) + ",\n";
    out += "    gradient_clip_algorithm=\"norm\",\n";
  } else {
    out += "    gradient_clip_val=None,\n";
  }
  out += ")\n\n\n";
  out += "def make_train_loader(dataset):\n";
  out += "    return DataLoader(dataset, batch_size=MICRO_BATCH, shuffle=True, num_workers=" +
         std::to_string(options.dataloader_num_workers) +
         ", pin_memory=" + (options.pin_memory ? "True" : "False") + ")\n";
  return out;
}

}  // namespace memplan::config_export
