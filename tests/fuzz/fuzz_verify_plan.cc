// libFuzzer target: verify's plan reader (`memplan verify MODEL --plan PLAN`,
// tools/memplan/verify_plan_reader.h) applied to the checked-in model the plan names (tiny_mlp,
// lm_head or transformer_opset17; tiny_mlp for any other), loaded as the CLI loads it. Bad input
// must be an Error value, never an exception, a crash or an abort on an internal invariant.

#include <cstddef>
#include <cstdint>
#include <string>

#include "analyzer/baseline/json_file.h"
#include "analyzer/pipeline/planned_model.h"
#include "tools/memplan/plan_flags.h"
#include "tools/memplan/verify_plan_reader.h"

namespace {

// The fixture the plan's model.path names (the seeds are tests/fixtures/plans/*.json).
std::string ModelFor(const std::string& text) {
  const std::string fixtures = MEMPLAN_FUZZ_FIXTURES;
  auto document = memplan::ParseJsonText(text, "fuzz.json");
  std::string path;
  if (document.ok() && document->is_object()) {
    auto model = document->find("model");
    if (model != document->end() && model->is_object()) {
      auto p = model->find("path");
      if (p != model->end() && p->is_string()) path = p->get<std::string>();
    }
  }
  for (const char* name : {"lm_head", "transformer_opset17"})
    if (path.find(name) != std::string::npos) return fixtures + "/" + name + ".onnx";
  return fixtures + "/tiny_mlp.onnx";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  memplan::PlanRequest request;
  request.analysis.model = ModelFor(text);
  auto graph = memplan::LoadPlannedModel(request);
  if (!graph.ok()) __builtin_trap();  // the fixtures import
  auto plan = memplan::cli::PlanFromJsonText(*graph, text, "fuzz.json", request);
  (void)plan;
  return 0;
}
