#include "tools/memplan/plan_flags.h"

#include <algorithm>
#include <vector>

#include "analyzer/memory_size.h"
#include "analyzer/precision/precision_placement.h"
#include "graph/bind_symbols.h"

namespace memplan::cli {

PlanArguments::PlanArguments() {
  for (const PlanFlagSpec& spec : kPlanFlagTable) {
    if (spec.analysis_flag) continue;
    if (spec.type == PlanFlagType::kText || spec.type == PlanFlagType::kPositiveInt)
      text.emplace(std::string(spec.key), std::string(spec.cli_default));
  }
}

std::string& PlanArguments::Text(std::string_view key) {
  auto it = text.find(key);
  MEMPLAN_CHECK(it != text.end());
  return it->second;
}

const std::string& PlanArguments::Text(std::string_view key) const {
  auto it = text.find(key);
  MEMPLAN_CHECK(it != text.end());
  return it->second;
}

void AddPlanFlags(CLI::App& command, PlanArguments& flags) {
  AddAnalysisFlags(command, flags.analysis);
  std::vector<const PlanFlagSpec*> listed;
  for (const PlanFlagSpec& spec : kPlanFlagTable)
    if (!spec.analysis_flag) listed.push_back(&spec);
  std::sort(listed.begin(), listed.end(), [](const PlanFlagSpec* a, const PlanFlagSpec* b) {
    return a->help_position < b->help_position;
  });
  for (const PlanFlagSpec* spec : listed) {
    const std::string argument(spec->argument);
    const std::string help(spec->help);
    if (spec->type == PlanFlagType::kSwitch) {
      command.add_flag(argument, flags.clip_grad, help);
      continue;
    }
    CLI::Option* option = command.add_option(argument, flags.Text(spec->key), help);
    if (spec->help_shows_default) option->capture_default_str();
  }
}

namespace {

std::string ArgumentOf(std::string_view key) {
  return std::string(PlanFlagWithKey(key).argument);
}

// The enumerator `text` names in `table`, with the CLI's message for a choice flag:
// "--recompute: expected none, all, sqrt, optimal or auto, got 'some'".
template <class Enum, size_t N>
Expected<Enum> ParseFlagChoice(const NameTable<Enum, N>& table, const PlanArguments& flags,
                               std::string_view key) {
  const std::string& text = flags.Text(key);
  for (const NamedValue<Enum>& entry : table)
    if (entry.name == text) return entry.value;
  return MakeError(ArgumentOf(key) + ": expected " + JoinNames(table, ", ", " or ") + ", got '" +
                   text + "'");
}

Expected<std::optional<int64_t>> OptionalPositive(const PlanArguments& flags,
                                                  std::string_view key) {
  const std::string& text = flags.Text(key);
  if (text.empty()) return std::optional<int64_t>();
  MEMPLAN_TRY(int64_t value, ParsePositiveInt(text, ArgumentOf(key)));
  return std::optional<int64_t>(value);
}

}  // namespace

Expected<PlanRequest> ResolvePlanFlags(const PlanArguments& flags, bool require_gpu) {
  PlanRequest request;
  MEMPLAN_TRY(request.analysis, ResolveAnalysisFlags(flags.analysis));
  PlannerOptions& p = request.planner;
  if (flags.Text("gpu").empty()) {
    if (require_gpu)
      return MakeError("--gpu is required (a size like 24G or a name like A100-80GB)");
  } else {
    MEMPLAN_TRY(p.gpu, ResolveGpu(flags.Text("gpu")));
  }
  MEMPLAN_TRY(p.global_batch, OptionalPositive(flags, "global_batch"));
  MEMPLAN_TRY(p.micro_batch, OptionalPositive(flags, "micro_batch"));
  if (request.analysis.batch) {
    if (p.micro_batch && *p.micro_batch != *request.analysis.batch)
      return MakeError("--batch and --micro-batch disagree; give one of them");
    p.micro_batch = request.analysis.batch;
  }
  if (!flags.Text("reserve").empty()) {
    auto reserve = ParseMemorySize(flags.Text("reserve"));
    if (!reserve.ok()) return MakeError("--reserve: " + reserve.error().message);
    p.reserve_bytes = *reserve;
  }
  MEMPLAN_TRY(request.search.precision,
              ParseFlagChoice(kPrecisionChoiceNames, flags, "precision"));
  if (std::optional<Precision> fixed = FixedPrecision(request.search.precision))
    p.program.precision = *fixed;
  MEMPLAN_TRY(p.program.optimizer, ParseOptimizerKind(flags.Text("optimizer")));
  MEMPLAN_TRY(p.program.loss, ParseLossKind(flags.Text("loss")));
  MEMPLAN_TRY(p.program.zero_grad, ParseZeroGradMode(flags.Text("zero_grad")));
  MEMPLAN_TRY(p.allocator, ParseAllocatorKind(flags.Text("allocator")));
  p.program.clip_gradients = flags.clip_grad;
  MEMPLAN_TRY(request.search.recompute,
              ParseFlagChoice(kRecomputeChoiceNames, flags, "recompute"));
  MEMPLAN_TRY(request.search.force_fp32, ParseOpList(flags.Text("fp32_ops"), ArgumentOf("fp32_ops")));
  MEMPLAN_TRY(request.search.force_fp16, ParseOpList(flags.Text("fp16_ops"), ArgumentOf("fp16_ops")));
  if (!flags.Text("loss_scaling").empty()) {
    auto scaling = ParseLossScaling(flags.Text("loss_scaling"));
    if (!scaling.ok()) return MakeError("--loss-scaling: " + scaling.error().message);
    p.program.loss_scaling = *scaling;
  }
  // The planner says the same without naming a flag; the CLI names --reserve.
  if (!flags.Text("gpu").empty() &&
      p.gpu.memory_bytes - p.gpu.context_bytes - p.reserve_bytes <= 0) {
    return MakeError("no memory left for training: GPU " + p.gpu.name + " has " +
                     std::to_string(p.gpu.memory_bytes) + " bytes, the CUDA context takes " +
                     std::to_string(p.gpu.context_bytes) + " and --reserve " +
                     std::to_string(p.reserve_bytes));
  }
  return request;
}

Status BindPlanSymbols(const Graph& graph, PlanRequest& request) {
  MEMPLAN_TRY(Bindings bindings, BindSymbols(graph, /*batch=*/std::nullopt, request.analysis.dims));
  request.planner.bindings = std::move(bindings);
  return OkStatus();
}

}  // namespace memplan::cli
