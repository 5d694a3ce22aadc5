#include "analyzer/report/offload_report.h"

#include <sstream>

#include "analyzer/program/category_bytes_json.h"
#include "analyzer/report/analysis_report.h"
#include "analyzer/text/memory_size.h"
#include "analyzer/text/number_format.h"
#include "analyzer/vocabulary/enum_table.h"

namespace memplan {
namespace {

// What the mode keeps on the host, for the text line.
constexpr EnumTable<OffloadMode, std::string_view, 4> kOffloadedWhat = {{
    {OffloadMode::kNone, "nothing"},
    {OffloadMode::kOptimizer, "optimizer state, the parameter copies it updates and gradients"},
    {OffloadMode::kOptimizerAndParams, "parameters, optimizer state and gradients"},
    {OffloadMode::kActivations, "saved activations"},
}};
static_assert(ListsEvery(kOffloadedWhat, kOffloadModeNames));

// Whose saved_tensors_hooks move the activations (--offload-hooks), for the text line.
constexpr EnumTable<OffloadHooks, std::string_view, 4> kHooksWhat = {{
    {OffloadHooks::kSaveOnCpu, "by torch.autograd.graph.save_on_cpu"},
    {OffloadHooks::kTorchtune,
     "by torchtune's OffloadActivations(use_streams=False): >= 1 KiB, no parameter, not the "
     "output head nor the loss"},
    {OffloadHooks::kTorchtuneStreams,
     "by torchtune's OffloadActivations (use_streams=True, enable_activation_offloading): "
     ">= 1 KiB, no parameter, not the output head nor the loss, copies on a second stream"},
    {OffloadHooks::kUnsloth,
     "by Unsloth's offloaded gradient checkpointing (use_gradient_checkpointing=\"unsloth\"): "
     "each layer's input hidden states over 2 MiB but the last layer's, two GPU staging "
     "buffers"},
}};
static_assert(ListsEvery(kHooksWhat, kOffloadHooksNames));

}  // namespace

bool IsOffloadReport(const AnalysisReport& report) {
  return report.plan != nullptr && report.plan->program.offload != OffloadMode::kNone;
}

nlohmann::ordered_json OffloadJson(const AnalysisReport& report) {
  const TrainingPlan& plan = *report.plan;
  const SimulationResult& sim = plan.simulation;
  const OffloadCostOptions cost = ResolvedOffloadCostOptions(*report.options);
  nlohmann::ordered_json j;
  j["mode"] = std::string(OffloadModeName(plan.program.offload));
  if (plan.program.offload == OffloadMode::kActivations)
    j["hooks"] = std::string(OffloadHooksName(report.options->program.offload.hooks));
  j["host_bytes"] = sim.host_peak_bytes;
  j["host_breakdown"] = CategoryBytesJson(sim.host_peak_breakdown);
  j["host_saved_activation_bytes"] = sim.host_saved_activation_bytes;
  j["host_link"] = std::string(cost.host_link.name);
  j["host_link_bytes_per_second"] = cost.host_link.bytes_per_second * cost.copy_efficiency;
  j["transfer_bytes_per_step"] = plan.time.transfer_bytes;
  j["transfer_seconds_per_step"] = plan.time.transfer_total_seconds;
  j["exposed_transfer_seconds_per_step"] = plan.time.transfer_seconds;
  j["host_optimizer_seconds"] = plan.time.host_optimizer_seconds;
  return j;
}

std::string OffloadText(const AnalysisReport& report) {
  const TrainingPlan& plan = *report.plan;
  const OffloadCostOptions cost = ResolvedOffloadCostOptions(*report.options);
  std::ostringstream s;
  s << "Host     " << FormatBytes(plan.simulation.host_peak_bytes) << " pinned ("
    << ValueOf(kOffloadedWhat, plan.program.offload) << " offloaded";
  if (plan.program.offload == OffloadMode::kActivations)
    s << " " << ValueOf(kHooksWhat, report.options->program.offload.hooks);
  s << ")\n";
  s << "         " << cost.host_link.description << " at "
    << FormatFixed(cost.host_link.bytes_per_second * cost.copy_efficiency / 1e9, 1)
    << " GB/s: " << FormatBytes(plan.time.transfer_bytes) << " per step, "
    << FormatFixed(plan.time.transfer_total_seconds, 4) << " s ("
    << FormatFixed(plan.time.transfer_seconds, 4) << " s not hidden by compute)";
  if (OffloadsOptimizer(plan.program.offload))
    s << "; optimizer step on the CPU " << FormatFixed(plan.time.host_optimizer_seconds, 4) << " s";
  s << "\n";
  return s.str();
}

}  // namespace memplan
