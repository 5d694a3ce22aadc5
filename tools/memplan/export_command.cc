// `memplan export PLAN.json --to
// deepspeed|hf-trainer|hf-trainer-json|accelerate|lightning|pytorch|torchtune
// [--out FILE]`: the plan `memplan analyze --json` printed, as the configuration a training
// framework reads (analyzer/config_export/export_config.h, docs/config_export.md). The config goes
// to --out, or to stdout.
// Exit 0 when exported; 1 when the plan does not fit its GPU ("fits": false: a config for it would
// run out of memory, so none is written); 2 on bad input.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "analyzer/baseline/json_file.h"
#include "analyzer/config_export/export_config.h"
#include "analyzer/config_export/export_target.h"
#include "analyzer/text/markup.h"
#include "analyzer/text/terminal_text.h"
#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"

namespace memplan::cli {
namespace {

struct ExportFlags {
  std::string plan;
  std::string to;
  std::string out;
  // What --max-grad-norm, --lr, --weight-decay and --momentum set: hyper-parameters the plan does
  // not decide (the last three written only when given, export_config.h).
  ExportOptions options;
};

// The hyper-parameters an export writes only when given (export_config.h): one --flag X each.
struct OptionalHyperParameter {
  const char* flag;
  std::optional<double> ExportOptions::*value;
  const char* help;
};
constexpr OptionalHyperParameter kOptionalHyperParameters[] = {
    {"--lr", &ExportOptions::learning_rate,
     "learning rate to write (default: none; the export says it is yours to set)"},
    {"--weight-decay", &ExportOptions::weight_decay,
     "AdamW weight decay to write (default: none; the framework's default)"},
    {"--momentum", &ExportOptions::sgd_momentum,
     "SGD momentum to write for a momentum plan (default: none; yours to set)"},
};

// "deepspeed|hf-trainer|...|pytorch", for the usage line and the --to error.
std::string TargetNames() { return JoinNames(kExportTargetNames, "|", "|"); }

int RunExport(const ExportFlags& flags) {
  if (flags.to.empty()) return ReportError("export: --to is required (" + TargetNames() + ")");
  Expected<ExportTarget> target = ParseExportTarget(flags.to);
  if (!target.ok()) return ReportError("--to: " + target.error().message);
  if (Status apart = CheckOutputsApart({{"the plan", flags.plan}}, {{"--out", flags.out}});
      !apart.ok())
    return ReportError(apart.error().message);
  Expected<nlohmann::json> plan = ReadJsonFile(flags.plan);
  if (!plan.ok()) return ReportError(plan.error().message);
  if (!plan->is_object() || plan->value("schema", std::string()) != "memplan/1")
    return ReportError(flags.plan +
                       ": not a memplan plan (expected the JSON of `memplan analyze --json`, "
                       "\"schema\": \"memplan/1\")");
  if (plan->value("fits", true) == false) {
    std::fprintf(stderr,
                 "memplan: export: the plan in %s does not fit its GPU (\"fits\": false); no "
                 "config written\n",
                 EscapeForTerminal(flags.plan).c_str());
    return kExitCheckFailed;
  }
  ExportOptions options = flags.options;
  options.plan_path = flags.plan;
  Expected<std::string> config = ExportConfig(*plan, *target, options);
  if (!config.ok()) return ReportError(flags.plan + ": " + config.error().message);
  Status written = WriteToFileOrStdout(flags.out, *config);
  if (!written.ok()) return ReportError(written.error().message);
  return kExitSuccess;
}

}  // namespace

Verb AddExportCommand(CLI::App& app) {
  const auto [command, flags] = AddVerb<ExportFlags>(
      app, "export", "write a plan (analyze --json) as a training-framework config");
  command->add_option("plan", flags->plan, "the plan: what `memplan analyze --json` printed")
      ->required()
      ->type_name("PLAN.json");
  command->add_option("--to", flags->to, "the framework: " + TargetNames())->type_name("TARGET");
  command->add_option("--out,--output", flags->out, "write the config here (default: stdout)")
      ->type_name("FILE");
  command
      ->add_option("--max-grad-norm", flags->options.max_grad_norm,
                   "gradient-clipping norm when the plan clips (default 1.0; 0 disables)")
      ->type_name("X");
  // Without a value an export leaves the hyper-parameter to the user (a None constant in Python,
  // the framework's default in a config) rather than inventing one.
  for (const OptionalHyperParameter& h : kOptionalHyperParameters)
    command->add_option(h.flag, flags->options.*h.value, h.help)->type_name("X");
  return VerbRunning(command, flags, RunExport);
}

}  // namespace memplan::cli
