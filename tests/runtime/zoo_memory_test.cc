// The runtime's promise on the real zoo architectures (build/zoo, generated at build time without
// weight data, so parameters are seeded and GPT-2's causal mask is synthesised): at a small batch
// the CPU allocator's measured peak equals the simulator's exact prediction byte for byte, in
// total and per category, and equals the allocator's own high-water mark.
//
// Sizes are the smallest the models take: batch 1 and seq 4 for the text models. SGD keeps no
// optimizer state, so one optimizer step already holds the steady state: the simulator's second
// step (which it replays to catch lazily allocated state) allocates exactly what its first does,
// and the measured one-step peak is compared with the full prediction.
//
// Not run by default (tagged [.][slow]; run with `runtime_tests "[zoo][slow]"`):
//   * resnet50 and vit_b16: their exported inputs are fixed at 224x224, so batch 1 is already
//     ~4 GFLOP (ResNet-50) and ~17.5 GFLOP (ViT-B/16) per forward, ~3x that per training step; on
//     the scalar reference kernels (well under 1 GFLOP/s here) that is minutes per step, far more
//     under ASan.
// Never run on the CPU: gpt2_xl. Its 1.56e9 fp32 parameters are 5.8 GiB and their gradients
// another 5.8 GiB at any batch (11.6 GiB with SGD), above verify's default --max-cpu-memory of 8G
// and the memory of a CI runner.

#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/runtime/executor_test_support.h"
#include "tests/test_paths.h"

namespace memplan {
namespace {

using testing::Batches;
using testing::BindAllSymbols;

Graph LoadZoo(const std::string& name) {
  const std::string path = memplan::testing::ZooDir() + "/" + name + ".onnx";
  REQUIRE(std::filesystem::exists(path));
  auto graph = ImportOnnxModel(path);
  if (!graph.ok()) FAIL(graph.error().message);
  return std::move(*graph);
}

void CheckZooModel(const std::string& name) {
  const Graph graph = LoadZoo(name);
  ProgramOptions options;
  options.optimizer = OptimizerKind::kSgd;
  auto program = DeriveTrainingProgram(graph, options);
  if (!program.ok()) FAIL(program.error().message);
  const Bindings bindings = BindAllSymbols(*program, /*batch=*/1, /*seq=*/4);

  ExactAllocator exact;
  auto predicted = Simulate(*program, bindings, exact);
  if (!predicted.ok()) FAIL(predicted.error().message);

  CpuBackend backend;
  auto data = SyntheticData::Create(graph, *program, bindings, /*seed=*/5);
  if (!data.ok()) FAIL(data.error().message);
  {
    auto executor = Executor::Create(graph, *program, bindings, backend, {});
    if (!executor.ok()) FAIL(executor.error().message);
    auto record = (*executor)->RunOptimizerStep(Batches(*data, 1, 1));
    if (!record.ok()) FAIL(record.error().message);
    CHECK(std::isfinite(record->loss));
    const MemoryMeasurement& m = (*executor)->memory();
    INFO(name << ": predicted peak at " << predicted->peak_step_name << ", measured at "
              << m.peak_step_name);
    CHECK(m.peak_bytes == predicted->peak_bytes);
    CHECK(m.allocator_peak_total == predicted->peak_bytes);
    for (MemoryCategory c : kAllMemoryCategories) {
      INFO(MemoryCategoryName(c));
      CHECK(m.peak_breakdown[c] == predicted->peak_breakdown[c]);
    }
    // A check that can fail for a real model: parameters and gradients are counted.
    CHECK(m.peak_breakdown[MemoryCategory::kParameters] > 0);
    CHECK(m.peak_breakdown[MemoryCategory::kGradients] > 0);
  }
  // Every program buffer went back to the allocator with the executor.
  CHECK(backend.Memory().live_total == 0);
}

TEST_CASE("zoo: measured CPU peak equals the exact prediction", "[zoo][executor][memory]") {
  for (const char* name : {"mlp", "resnet18", "bert_base", "gpt2_small"}) {
    DYNAMIC_SECTION(name) { CheckZooModel(name); }
  }
}

TEST_CASE("zoo: measured CPU peak equals the exact prediction (224x224 models)",
          "[.][slow][zoo][executor][memory]") {
  for (const char* name : {"resnet50", "vit_b16"}) {
    DYNAMIC_SECTION(name) { CheckZooModel(name); }
  }
}

}  // namespace
}  // namespace memplan
