#include "tools/memplan/check_configuration.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

namespace memplan::cli {

PlanFlags CliFlagsOf(const memplan::PlanFlags& recorded, const std::string& model) {
  PlanFlags flags;
  flags.analysis.model = model;
  auto text = [](const std::optional<int64_t>& value) {
    return value ? std::to_string(*value) : std::string();
  };
  flags.analysis.batch = text(recorded.batch);
  flags.global_batch = text(recorded.global_batch);
  flags.micro_batch = text(recorded.micro_batch);
  for (const auto& [name, size] : recorded.dims)
    flags.analysis.dims.push_back(name + "=" + std::to_string(size));
  // A string flag left out keeps the CLI's default, which PlanFlags{} already holds.
  auto copy = [](const std::optional<std::string>& value, std::string& into) {
    if (value) into = *value;
  };
  copy(recorded.batch_dim, flags.analysis.batch_dim);
  copy(recorded.gpu, flags.gpu);
  copy(recorded.reserve, flags.reserve);
  copy(recorded.precision, flags.precision);
  copy(recorded.optimizer, flags.optimizer);
  copy(recorded.loss, flags.loss);
  copy(recorded.zero_grad, flags.zero_grad);
  copy(recorded.allocator, flags.allocator);
  copy(recorded.recompute, flags.recompute);
  copy(recorded.fp32_ops, flags.fp32_ops);
  copy(recorded.fp16_ops, flags.fp16_ops);
  copy(recorded.loss_scaling, flags.loss_scaling);
  flags.clip = recorded.clip_grad;
  return flags;
}

memplan::PlanFlags RecordedFlagsOf(const PlanFlags& flags) {
  const PlanFlags defaults;
  memplan::PlanFlags recorded;
  auto integer = [](const std::string& text) -> std::optional<int64_t> {
    if (text.empty()) return std::nullopt;
    return std::stoll(text);  // validated by ResolvePlanFlags
  };
  recorded.batch = integer(flags.analysis.batch);
  recorded.global_batch = integer(flags.global_batch);
  recorded.micro_batch = integer(flags.micro_batch);
  for (const std::string& text : flags.analysis.dims) {
    Expected<DimBinding> dim = ParseDimBinding(text);
    MEMPLAN_CHECK(dim.ok());
    recorded.dims[dim->name] = dim->value;
  }
  auto differing = [](const std::string& value,
                      const std::string& default_value) -> std::optional<std::string> {
    if (value == default_value) return std::nullopt;
    return value;
  };
  recorded.batch_dim = differing(flags.analysis.batch_dim, defaults.analysis.batch_dim);
  recorded.gpu = differing(flags.gpu, defaults.gpu);
  recorded.reserve = differing(flags.reserve, defaults.reserve);
  recorded.precision = differing(flags.precision, defaults.precision);
  recorded.optimizer = differing(flags.optimizer, defaults.optimizer);
  recorded.loss = differing(flags.loss, defaults.loss);
  recorded.zero_grad = differing(flags.zero_grad, defaults.zero_grad);
  recorded.allocator = differing(flags.allocator, defaults.allocator);
  recorded.recompute = differing(flags.recompute, defaults.recompute);
  recorded.fp32_ops = differing(flags.fp32_ops, defaults.fp32_ops);
  recorded.fp16_ops = differing(flags.fp16_ops, defaults.fp16_ops);
  recorded.loss_scaling = differing(flags.loss_scaling, defaults.loss_scaling);
  recorded.clip_grad = flags.clip;
  return recorded;
}

std::string UnrecordableOption(const CLI::App& command, const std::vector<std::string>& own) {
  // Every command-line plan flag RecordedFlagsOf maps onto memplan::PlanFlags.
  static const char* const kRecordable[] = {
      "model",          "--batch",        "--dim",       "--batch-dim", "--gpu",
      "--global-batch", "--micro-batch",  "--reserve",   "--precision", "--optimizer",
      "--loss",         "--zero-grad",    "--allocator", "--recompute", "--fp32-ops",
      "--fp16-ops",     "--loss-scaling", "--clip-grad"};
  for (const CLI::Option* option : command.get_options()) {
    if (option->count() == 0) continue;
    std::string name = option->get_name();
    if (std::find(own.begin(), own.end(), name) != own.end()) continue;
    if (std::find(std::begin(kRecordable), std::end(kRecordable), name) == std::end(kRecordable))
      return name;
  }
  return {};
}

Expected<MemoryResult> MemoryResultOf(const AnalysisSession& session) {
  // Through the JSON on purpose: a baseline records exactly what `analyze --json` reports.
  nlohmann::json json = nlohmann::json::parse(SessionJson(session).dump());
  return MemoryResultFromPlanJson(json);
}

Expected<MemoryResult> AnalyseConfiguration(const CheckConfiguration& config,
                                            const std::filesystem::path& directory) {
  const std::string where = "configuration '" + config.name + "': ";
  std::string model = ResolveModelPath(directory, config.model).string();
  if (!config.flags.gpu)
    return MakeError(where + "flag 'gpu' is required (a size like 24G or a name like A100-80GB)");
  Expected<PlanRequest> request =
      ResolvePlanFlags(CliFlagsOf(config.flags, model), /*require_gpu=*/true);
  if (!request.ok()) return MakeError(where + request.error().message);
  // No progress lines: several configurations in a CI log read better without them.
  auto session = RunAnalysisSession(std::move(*request), Progress(OutputFormat::kJson));
  if (!session.ok()) return MakeError(where + session.error().message);
  Expected<MemoryResult> result = MemoryResultOf(**session);
  if (!result.ok()) return MakeError(where + result.error().message);
  return result;
}

}  // namespace memplan::cli
