// AllocationScript (analyzer/simulation/allocation_script.h) and CachingPeakMemo
// (analyzer/simulation/caching_peak_memo.h) must answer what Simulate answers - the independent
// implementation, a full walk per micro-batch - on derived programs of the fixture models: the
// exact live peak and the model's allocated and reserved peaks, under every allocator model, at
// micro-batches on both sides of the caching allocator's 1 MiB small/large pool step, with
// accumulation, mixed precision and host offload.

#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "analyzer/derivation/program_derivation.h"
#include "analyzer/simulation/allocation_script.h"
#include "analyzer/simulation/caching_allocator.h"
#include "analyzer/simulation/caching_peak_memo.h"
#include "analyzer/simulation/exact_allocator.h"
#include "analyzer/simulation/expandable_allocator.h"
#include "analyzer/simulation/simulator.h"
#include "graph/onnx_import.h"
#include "tests/test_paths.h"

namespace memplan {
namespace {

// `batch` bound to m, every other symbol (seq) to 8.
Bindings BindAt(const TrainingProgram& program, int64_t m) {
  Bindings b(&program.symbols);
  for (size_t s = 0; s < program.symbols.size(); ++s) b.Bind(static_cast<SymbolId>(s), 8);
  if (program.batch_symbol) b.Bind(*program.batch_symbol, m);
  return b;
}

TrainingProgram Derive(const std::string& file, const ProgramOptions& options) {
  auto graph = ImportOnnxModel(memplan::testing::FixturesDir() + "/" + file);
  REQUIRE(graph.ok());
  auto program = DeriveTrainingProgram(*graph, options);
  REQUIRE(program.ok());
  return std::move(program).value();
}

std::vector<ProgramOptions> OptionSets() {
  std::vector<ProgramOptions> sets;
  ProgramOptions fp32;
  fp32.optimizer = OptimizerKind::kAdam;
  sets.push_back(fp32);
  ProgramOptions fp16 = fp32;
  fp16.precision = Precision::kFp16;
  sets.push_back(fp16);
  ProgramOptions offloaded = fp32;
  offloaded.offload.mode = OffloadMode::kOptimizer;  // states on the host: not the model's
  sets.push_back(offloaded);
  return sets;
}

// Runs `check` on the program of each fixture model under each of OptionSets(), one section each.
void ForEachFixtureProgram(const std::function<void(const TrainingProgram&)>& check) {
  for (const char* file : {"resnet18_opset17.onnx", "gpt_opset17.onnx"}) {
    for (const ProgramOptions& options : OptionSets()) {
      DYNAMIC_SECTION(file << " " << PrecisionName(options.precision) << " offload "
                           << static_cast<int>(options.offload.mode)) {
        const TrainingProgram program = Derive(file, options);
        check(program);
      }
    }
  }
}

// The micro-batches: tiny, around the resnet's activations crossing 1 MiB, and large.
const std::vector<int64_t> kMicroBatches = {1, 2, 3, 8, 31, 32, 33, 100, 257};

void CheckSameAsSimulate(const TrainingProgram& program, AllocatorModel& model, int64_t k) {
  auto script = AllocationScript::Record(program, k, SimulationOptions{}.iterations);
  REQUIRE(script.ok());
  for (int64_t m : kMicroBatches) {
    INFO("m = " << m << ", k = " << k << ", " << model.name());
    SimulationOptions options;
    options.accumulation_steps = k;
    options.record_timeline = false;
    auto reference = Simulate(program, BindAt(program, m), model, options);
    REQUIRE(reference.ok());
    auto sizes = EvaluateBufferSizes(program, BindAt(program, m));
    REQUIRE(sizes.ok());
    const ScriptPeaks peaks = script->Replay(*sizes, model);
    CHECK(peaks.live_bytes == reference->peak_bytes);
    CHECK(peaks.allocated_bytes == reference->peak_allocated_bytes);
    CHECK(peaks.reserved_bytes == reference->peak_reserved_bytes);
    CHECK(script->LivePeak(*sizes) == reference->peak_bytes);
  }
}

TEST_CASE("allocation script replays equal full simulations on the fixture models",
          "[simulator][planner]") {
  ForEachFixtureProgram([](const TrainingProgram& program) {
    CachingAllocator caching;
    ExpandableAllocator expandable;
    ExactAllocator exact;
    for (int64_t k : {1, 2, 3}) {
      CheckSameAsSimulate(program, caching, k);
      CheckSameAsSimulate(program, expandable, k);
      CheckSameAsSimulate(program, exact, k);
    }
  });
}

TEST_CASE("allocation script records the simulation's errors", "[simulator][planner]") {
  const TrainingProgram program = Derive("gpt_opset17.onnx", OptionSets()[0]);
  auto zero_k = AllocationScript::Record(program, 0, 2);
  REQUIRE_FALSE(zero_k.ok());
  CHECK(zero_k.error().message == "accumulation steps must be >= 1, got 0");
  auto no_iterations = AllocationScript::Record(program, 1, 0);
  REQUIRE_FALSE(no_iterations.ok());
  CHECK(no_iterations.error().message == "simulation needs at least one iteration");

  // A program that frees a buffer twice (an unguarded free of the body, repeated): the walk's
  // error, as Simulate reports it.
  TrainingProgram broken = program;
  bool doubled = false;
  for (LogicalTime t = broken.micro_batch.begin; t < broken.micro_batch.end && !doubled; ++t) {
    std::vector<MemoryEvent>& end = broken.steps[static_cast<size_t>(t)].end;
    for (const MemoryEvent& e : end) {
      if (e.action != MemoryEvent::Action::kFree || e.guard != MemoryEvent::Guard::kNone) continue;
      const MemoryEvent copy = e;
      end.push_back(copy);
      doubled = true;
      break;
    }
  }
  REQUIRE(doubled);
  auto recorded = AllocationScript::Record(broken, 1, 2);
  ExactAllocator exact;
  auto simulated = Simulate(broken, BindAt(broken, 2), exact);
  REQUIRE_FALSE(recorded.ok());
  REQUIRE_FALSE(simulated.ok());
  CHECK(recorded.error().message == simulated.error().message);
}

TEST_CASE("caching peaks memoised by rounded sizes equal replays at every micro-batch",
          "[simulator][planner]") {
  ForEachFixtureProgram([](const TrainingProgram& program) {
    auto script = AllocationScript::Record(program, 1, SimulationOptions{}.iterations);
    REQUIRE(script.ok());
    auto sizes_at = [&program](int64_t m) {
      return EvaluateBufferSizes(program, BindAt(program, m));
    };
    CachingPeakMemo memo;
    CachingAllocator memo_model;
    CachingAllocator fresh;
    // Every m in 1..48 twice, in two orders: neighbours that round alike hit the memo.
    std::vector<int64_t> order;
    for (int64_t m = 1; m <= 48; ++m) order.push_back(m);
    for (int64_t m = 48; m >= 1; --m) order.push_back(m);
    for (int64_t m : order) {
      INFO("m = " << m);
      auto sizes = sizes_at(m);
      REQUIRE(sizes.ok());
      const ScriptPeaks memoised = memo.PeaksAt(*script, m, *sizes, sizes_at, memo_model);
      const ScriptPeaks replayed = script->Replay(*sizes, fresh);
      CHECK(memoised.live_bytes == replayed.live_bytes);
      CHECK(memoised.allocated_bytes == replayed.allocated_bytes);
      CHECK(memoised.reserved_bytes == replayed.reserved_bytes);
    }
    // The second pass is answered from the memo entirely, the first in part.
    CHECK(memo.hits() >= 48);
  });
}

}  // namespace
}  // namespace memplan
