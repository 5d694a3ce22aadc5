// The backend factory (runtime/backend_factory.h) and the step observer hook on every backend
// (runtime/backend.h), on the CPU backend: what a profiler sees without wrapping the backend.

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "runtime/backend_factory.h"
#include "tests/runtime/executor_test_support.h"

namespace memplan {
namespace {

using testing::Batches;
using testing::BindAllSymbols;
using testing::LoadFixture;

TEST_CASE("backend factory: cpu always, cuda known in every build", "[runtime][backend]") {
  const std::vector<std::string_view> names = BackendNames();
  CHECK(names == std::vector<std::string_view>{"cpu", "cuda"});
  auto cpu = MakeBackend("cpu");
  REQUIRE(cpu.ok());
  CHECK((*cpu)->name() == "cpu");
  // Without a GPU (this build or this machine), "cuda" answers with the one message.
  auto cuda = MakeBackend("cuda");
  if (cuda.ok()) {
    CHECK((*cuda)->name() == "cuda");
  } else {
    CHECK(cuda.error().message == "no CUDA device available");
  }
  auto unknown = MakeBackend("tpu");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().message == "unknown backend 'tpu': this memplan has cpu or cuda");
}

class RecordingObserver final : public StepObserver {
 public:
  void OnEnterStep(const StepSite& site) override { sites.push_back(site); }
  std::vector<StepSite> sites;
};

TEST_CASE("step observer: told every step execution, in program order per micro-batch",
          "[runtime][backend]") {
  const Graph graph = LoadFixture("tiny_mlp.onnx");
  ProgramOptions options;
  options.accumulation_steps = 2;
  auto program = DeriveTrainingProgram(graph, options);
  REQUIRE(program.ok());
  const Bindings bindings = BindAllSymbols(*program, /*batch=*/4, /*other=*/1);
  auto data = SyntheticData::Create(graph, *program, bindings, /*seed=*/1);
  REQUIRE(data.ok());

  CpuBackend backend;
  RecordingObserver observer;
  backend.set_step_observer(&observer);
  auto executor = Executor::Create(graph, *program, bindings, backend, {});
  REQUIRE(executor.ok());
  REQUIRE((*executor)->RunOptimizerStep(Batches(*data, 2, 4)).ok());

  // Both micro-batches are announced; within one the steps come in program order.
  const auto num_steps = static_cast<int64_t>(program->steps.size());
  bool saw_second_micro_batch = false;
  for (size_t i = 0; i < observer.sites.size(); ++i) {
    const StepSite& s = observer.sites[i];
    CHECK((s.step >= 0 && s.step < num_steps));
    saw_second_micro_batch |= s.micro_batch == 1;
    if (i > 0 && observer.sites[i - 1].micro_batch == s.micro_batch)
      CHECK(observer.sites[i - 1].step < s.step);
  }
  CHECK(saw_second_micro_batch);

  // Detached, the observer hears nothing more.
  const size_t heard = observer.sites.size();
  backend.set_step_observer(nullptr);
  REQUIRE((*executor)->RunOptimizerStep(Batches(*data, 2, 4, /*step=*/1)).ok());
  CHECK(observer.sites.size() == heard);
}

}  // namespace
}  // namespace memplan
