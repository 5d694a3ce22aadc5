// The core promise of the runtime: interpreting a training program on the CPU backend allocates
// exactly what the simulator predicts. Measured (CountingCpuAllocator, device bytes of each
// dtype) and predicted (Simulate with the exact model) peaks agree byte for byte, in total and
// per category, for several models, precisions, recompute and accumulation settings.

#include <catch2/catch.hpp>

#include "analyzer/simulation/caching_allocator.h"
#include "tests/runtime/executor_test_support.h"

namespace memplan {
namespace {

using testing::Batches;
using testing::BindAllSymbols;
using testing::LoadFixture;

// The options the program is derived with, and a recompute set that needs the graph to name.
struct Config {
  ProgramOptions options;
  bool recompute_every_third = false;
};

// Runs two optimizer steps (the simulator's default: the lazy first and the steady second) and
// compares every measured number with the simulator's.
void CheckMeasuredEqualsPredicted(const Graph& graph, const Config& c, int64_t batch,
                                  int64_t other) {
  ProgramOptions options = c.options;
  if (c.recompute_every_third)
    for (size_t n = 1; n < graph.num_nodes(); n += 3) options.recompute.push_back(NodeId(n));
  auto program = DeriveTrainingProgram(graph, options);
  REQUIRE(program.ok());
  const Bindings bindings = BindAllSymbols(*program, batch, other);

  ExactAllocator exact;
  auto predicted = Simulate(*program, bindings, exact);
  REQUIRE(predicted.ok());
  CachingAllocator caching;
  auto predicted_caching = Simulate(*program, bindings, caching);
  REQUIRE(predicted_caching.ok());

  CpuBackend backend;
  auto data = SyntheticData::Create(graph, *program, bindings, /*seed=*/7);
  REQUIRE(data.ok());
  auto executor = Executor::Create(graph, *program, bindings, backend, {});
  if (!executor.ok()) FAIL(executor.error().message);
  for (int step = 0; step < 2; ++step) {
    auto record =
        (*executor)->RunOptimizerStep(Batches(*data, options.accumulation_steps, batch, step));
    if (!record.ok()) FAIL(record.error().message);
    CHECK(std::isfinite(record->loss));
  }
  const MemoryMeasurement& m = (*executor)->memory();
  CHECK(m.peak_bytes == predicted->peak_bytes);
  CHECK(m.allocator_peak_total == predicted->peak_bytes);
  CHECK(m.peak_step_name == predicted->peak_step_name);
  // Per category: the breakdown at the peak, and each category's own maximum over the run.
  CategoryBytes category_max;
  for (const TimelinePoint& p : predicted->timeline)
    for (MemoryCategory cat : kAllMemoryCategories)
      category_max[cat] = std::max(category_max[cat], p.by_category[cat]);
  for (MemoryCategory cat : kAllMemoryCategories) {
    INFO(MemoryCategoryName(cat));
    CHECK(m.peak_breakdown[cat] == predicted->peak_breakdown[cat]);
    CHECK(m.allocator_category_peaks[cat] == category_max[cat]);
  }
  CHECK(m.num_allocations >= predicted->num_allocations);
  // With k <= 2 the simulator replays every micro-batch, so the caching model sees the same
  // request sequence.
  if (options.accumulation_steps <= 2) {
    CHECK(m.caching_peak_reserved_bytes == predicted_caching->peak_reserved_bytes);
    CHECK(m.caching_peak_allocated_bytes == predicted_caching->peak_allocated_bytes);
  }
  // After the run only persistent buffers are live: what the simulator ends with.
  CHECK(backend.Memory().live_total == predicted->persistent_bytes);
}

TEST_CASE("executor memory: tiny mlp, every precision and option", "[executor][memory]") {
  const Graph graph = LoadFixture("tiny_mlp.onnx");
  for (Precision precision : {Precision::kFp32, Precision::kFp16, Precision::kBf16}) {
    for (int64_t k : {1, 3}) {
      for (bool recompute : {false, true}) {
        DYNAMIC_SECTION(PrecisionName(precision) << " k=" << k << " recompute=" << recompute) {
          Config c;
          c.options.precision = precision;
          c.options.accumulation_steps = k;
          c.recompute_every_third = recompute;
          CheckMeasuredEqualsPredicted(graph, c, /*batch=*/4, /*other=*/1);
        }
      }
    }
  }
  SECTION("sgd, momentum, clipping, zero_grad=zero") {
    for (OptimizerKind o : {OptimizerKind::kSgd, OptimizerKind::kMomentum, OptimizerKind::kAdamW}) {
      Config c;
      c.options.optimizer = o;
      c.options.accumulation_steps = 2;
      c.options.clip_gradients = true;
      c.options.zero_grad = ZeroGradMode::kZero;
      CheckMeasuredEqualsPredicted(graph, c, 4, 1);
    }
  }
}

TEST_CASE("executor memory: transformer encoder at seq 8", "[executor][memory]") {
  const Graph graph = LoadFixture("transformer_opset17.onnx");
  for (Precision precision : {Precision::kFp32, Precision::kFp16, Precision::kBf16}) {
    DYNAMIC_SECTION(PrecisionName(precision)) {
      Config c;
      c.options.precision = precision;
      c.options.accumulation_steps = 2;
      c.recompute_every_third = precision != Precision::kFp32;
      CheckMeasuredEqualsPredicted(graph, c, /*batch=*/2, /*seq=*/8);
    }
  }
}

TEST_CASE("executor memory: gpt at seq 8", "[executor][memory]") {
  const Graph graph = LoadFixture("gpt_opset13.onnx");
  for (Precision precision : {Precision::kFp32, Precision::kBf16}) {
    DYNAMIC_SECTION(PrecisionName(precision)) {
      Config c;
      c.options.precision = precision;
      c.options.accumulation_steps = 2;
      c.recompute_every_third = precision == Precision::kBf16;
      CheckMeasuredEqualsPredicted(graph, c, /*batch=*/2, /*seq=*/8);
    }
  }
}

}  // namespace
}  // namespace memplan
