// `memplan inspect model.onnx [--batch N] [--dim name=value] [--json|--format ...]`: what the
// model contains (ops, parameters, inputs/outputs, symbols) and what may mislead an estimate.
#include <cstdio>
#include <memory>

#include "graph/bind_symbols.h"
#include "graph/model_summary.h"
#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"
#include "tools/memplan/inspect_output.h"

namespace memplan::cli {
namespace {

int RunInspect(const AnalysisFlags& flags) {
  Expected<AnalysisRequest> request = ResolveAnalysisFlags(flags);
  if (!request.ok()) return ReportError(request.error().message);
  Progress progress(request->format);
  progress.Report("importing " + request->model + "...");
  Expected<Graph> graph = LoadModel(*request, FusionSet::kFusedOps, progress);
  if (!graph.ok()) return ReportError(graph.error().message);
  Expected<Bindings> bindings = BindSymbols(*graph, request->batch, request->dims);
  if (!bindings.ok()) return ReportError(bindings.error().message);

  ModelSummary summary = SummarizeModel(*graph, *bindings);
  std::string out;
  switch (request->format) {
    case OutputFormat::kJson:
      out = RenderInspectJson(summary, request->model);
      break;
    case OutputFormat::kMarkdown:
      out = RenderInspectMarkdown(summary, request->model);
      break;
    case OutputFormat::kText:
      out = RenderInspectText(summary, request->model);
      break;
  }
  if (Status written = WriteStdout(out); !written.ok()) return ReportError(written.error().message);
  return kExitSuccess;
}

}  // namespace

Verb AddInspectCommand(CLI::App& app) {
  const auto [command, flags] = AddVerb<AnalysisFlags>(
      app, "inspect", "show ops, parameters, inputs/outputs, symbols, warnings");
  AddAnalysisFlags(*command, *flags);
  return VerbRunning(command, flags, RunInspect);
}

}  // namespace memplan::cli
