// libFuzzer target: ONNX import from bytes, then a fixed-micro-batch analysis through the library
// API (the same path as `memplan analyze --micro-batch 2`), so shape rules, program derivation and
// the simulator all see fuzzed graphs. Any bad input must come back as an Error value; a crash,
// a sanitizer report, an abort ("internal invariant") or a hang is a finding.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "analyzer/cost/gpu_specs.h"
#include "analyzer/planning/planner.h"
#include "graph/onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace memplan;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Expected<Graph> graph = ImportOnnxModelFromBytes(bytes, "fuzz.onnx");
  if (!graph.ok()) return 0;

  PlannerOptions options;
  Expected<GpuSpec> gpu = ResolveGpu("80GB");
  if (!gpu.ok()) return 0;
  options.gpu = *gpu;
  options.micro_batch = 2;
  // Every symbol small: the analysis runs on the graph's structure, not on huge sizes, so one
  // input takes milliseconds. The planner binds the batch symbol itself.
  options.bindings = Bindings(&graph->symbols());
  for (size_t id = 0; id < graph->symbols().size(); ++id) {
    options.bindings.Bind(static_cast<SymbolId>(id), 3);
  }
  Expected<TrainingPlan> plan = PlanTraining(*graph, options);
  (void)plan;
  return 0;
}
