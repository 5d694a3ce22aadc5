#include "analyzer/report/parallel_report.h"

#include <sstream>

#include "analyzer/parallel/engine_options.h"
#include "analyzer/parallel/tensor_parallel.h"
#include "analyzer/report/analysis_report.h"
#include "analyzer/text/json_fields.h"
#include "analyzer/text/memory_size.h"
#include "analyzer/text/number_format.h"

namespace memplan {
namespace {

ModelStateBytes ChosenModelStates(const AnalysisReport& report) {
  return ModelStateBytesOf(report.plan->program, report.plan->simulation.buffer_bytes);
}

}  // namespace

nlohmann::ordered_json ModelStateBytesJson(const ModelStateBytes& states) {
  nlohmann::ordered_json j;
  MEMPLAN_JSON_FIELDS(j, states, parameters, master_weights, gradients, optimizer_state);
  return j;
}

bool IsDataParallelReport(const AnalysisReport& report) {
  return report.plan != nullptr && !report.plan->program.data_parallel_strategy.empty();
}

void AddDataParallelPlanKeys(const AnalysisReport& report, nlohmann::ordered_json& plan_json) {
  const TrainingProgram& program = report.plan->program;
  plan_json["parallel"] = program.data_parallel_strategy;
  plan_json["gpus"] = PlannedGpus(report);
  plan_json["nodes"] = ResolvedCollectiveOptions(*report.options).nodes;
  // The engine settings the plan was made with, where they differ from the engines' defaults
  // (export and verify --plan read them back).
  if (report.options->program.data_parallel) {
    nlohmann::ordered_json settings = EngineOptionsToJson(*report.options->program.data_parallel);
    if (!settings.empty()) plan_json["engine_options"] = std::move(settings);
  }
}

void AddDataParallelJson(const AnalysisReport& report, nlohmann::ordered_json& json) {
  const TrainingPlan& plan = *report.plan;
  const CollectiveCostOptions links = ResolvedCollectiveOptions(*report.options);
  json["model_state_bytes"] = ModelStateBytesJson(ChosenModelStates(report));
  nlohmann::ordered_json p;
  p["strategy"] = plan.program.data_parallel_strategy;
  p["gpus"] = PlannedGpus(report);
  p["nodes"] = links.nodes;
  p["intra_node_link"] = std::string(links.intra_node.name);
  if (links.nodes > 1) p["inter_node_link"] = std::string(links.inter_node.name);
  p["communication_seconds"] = plan.time.communication_seconds;
  p["communication_total_seconds"] = plan.time.communication_total_seconds;
  p["auto"] = report.strategies.size() > 1;
  if (!report.parallel_explanation.empty()) p["explanation"] = report.parallel_explanation;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const StrategyOutcome& o : report.strategies) {
    nlohmann::ordered_json row;
    row["strategy"] = std::string(ParallelStrategyName(o.strategy));
    row["fits"] = o.feasible;
    row["micro_batch"] = o.chosen.micro_batch;
    row["accumulation_steps"] = o.chosen.accumulation_steps;
    row["global_batch"] = o.chosen.global_batch;
    row["peak_bytes"] = o.chosen.peak_bytes;
    row["samples_per_second"] = o.chosen.samples_per_second;
    row["communication_seconds"] = o.communication_seconds;
    row["model_state_bytes"] = ModelStateBytesJson(o.model_states);
    rows.push_back(row);
  }
  p["strategies"] = rows;
  json["parallel"] = p;
}

std::string DataParallelText(const AnalysisReport& report) {
  const TrainingPlan& plan = *report.plan;
  const CollectiveCostOptions links = ResolvedCollectiveOptions(*report.options);
  const ModelStateBytes states = ChosenModelStates(report);
  std::ostringstream s;
  s << "Parallel " << plan.program.data_parallel_strategy << " on "
    << plan.program.data_parallel_ranks;
  const int64_t tp = report.options->tensor_parallel.degree;
  if (tp > 1) s << " replicas of " << tp << " tensor-parallel GPUs = " << PlannedGpus(report);
  s << " GPUs (" << links.nodes << (links.nodes == 1 ? " node, " : " nodes, ")
    << links.intra_node.description;
  if (links.nodes > 1) s << " + " << links.inter_node.description;
  s << "); memory and peak are per rank\n";
  if (plan.program.data_parallel_strategy == ParallelStrategyName(ParallelStrategy::kHybridShard)) {
    const int64_t ranks = plan.program.data_parallel_ranks;
    if (links.nodes <= 1) {
      s << "         hybrid-shard on one node shards over all " << ranks
        << " GPUs and has no replica to all-reduce with: the same plan as fsdp\n";
    } else {
      s << "         hybrid-shard: states sharded over the " << ranks / links.nodes
        << " GPUs of each node, replicated on " << links.nodes
        << " nodes; only gradient shards cross the network\n";
    }
  }
  s << "         model states per rank: parameters " << FormatBytes(states.parameters)
    << ", masters " << FormatBytes(states.master_weights) << ", gradients "
    << FormatBytes(states.gradients) << ", optimizer state " << FormatBytes(states.optimizer_state)
    << "\n";
  s << "         communication " << FormatFixed(plan.time.communication_total_seconds, 4)
    << " s per step, " << FormatFixed(plan.time.communication_seconds, 4)
    << " s of it not hidden by compute\n";
  if (!report.parallel_explanation.empty()) s << "Strategy " << report.parallel_explanation << "\n";
  return s.str();
}

int64_t PlannedGpus(const AnalysisReport& report) {
  const int64_t tp = report.options != nullptr ? report.options->tensor_parallel.degree : 1;
  return report.plan->program.data_parallel_ranks * tp;
}

void AddTensorParallelPlanKeys(const AnalysisReport& report, nlohmann::ordered_json& plan_json) {
  if (report.options == nullptr || !report.options->tensor_parallel.enabled()) return;
  plan_json["gpus"] = PlannedGpus(report);
  plan_json["tensor_parallel"] = TensorParallelJson(report.options->tensor_parallel);
}

std::string TensorParallelText(const AnalysisReport& report) {
  if (report.options == nullptr || !report.options->tensor_parallel.enabled()) return "";
  std::ostringstream s;
  s << "Tensor   " << TensorParallelLine(report.options->tensor_parallel) << "; memory and peak "
    << "are per GPU\n";
  return s.str();
}

}  // namespace memplan
