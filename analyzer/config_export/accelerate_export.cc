// 🤗 Accelerate config YAML for `accelerate launch --config_file`. Only fields of accelerate's
// ClusterConfig are written: its loader rejects unknown keys ("had unknown keys"), and gradient
// accumulation is not a top-level field, so accumulation steps go into a comment naming the two
// places accelerate does read them (Accelerator(gradient_accumulation_steps=k) and the
// ACCELERATE_GRADIENT_ACCUMULATION_STEPS environment variable).
//
// Strings YAML 1.1 would read as booleans ('NO', 'no') are quoted, as `accelerate config` does.

#include "analyzer/config_export/export_text.h"
#include "analyzer/config_export/exporters.h"

namespace memplan::config_export {
namespace {

std::string MixedPrecisionValue(Precision precision) {
  switch (precision) {
    case Precision::kFp32:
      return "'no'";
    case Precision::kFp16:
      return "fp16";
    case Precision::kBf16:
      return "bf16";
  }
  return "'no'";
}

}  // namespace

std::string ExportAccelerate(const ExportPlan& plan, const ExportOptions& options) {
  std::string k = std::to_string(plan.accumulation_steps);
  std::string out = "# " + ProvenanceSentence(plan, options) + "\n";
  out += "# Micro-batch: DataLoader(dataset, batch_size=" + std::to_string(plan.micro_batch) +
         ") in the training script.\n";
  out +=
      "# Accumulation (" + k + " micro-batches per optimizer step) is not a config-file key for\n";
  out += "# a single GPU: use Accelerator(gradient_accumulation_steps=" + k +
         ") with `with accelerator.accumulate(model):`,\n";
  out += "# or export ACCELERATE_GRADIENT_ACCUMULATION_STEPS=" + k + ".\n";
  if (plan.UsesRecompute()) {
    out +=
        "# Recompute: wrap these modules in torch.utils.checkpoint.checkpoint (see `memplan "
        "export --target pytorch`):\n";
    for (const CheckpointModule& m : plan.checkpoints.modules)
      out += "#   " + CommentSafe(m.module_path) + "\n";
    for (const std::string& node : plan.checkpoints.unmapped_nodes)
      out += "#   (node without a module scope) " + CommentSafe(node) + "\n";
  }
  out += "compute_environment: LOCAL_MACHINE\n";
  out += "distributed_type: 'NO'\n";
  out += "machine_rank: 0\n";
  out += "mixed_precision: " + MixedPrecisionValue(plan.precision) + "\n";
  out += "num_machines: 1\n";
  out += "num_processes: 1\n";
  out += "use_cpu: false\n";
  return out;
}

}  // namespace memplan::config_export
