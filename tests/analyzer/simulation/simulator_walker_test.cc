// The ProgramWalker on hand-built micro-programs: the exact event trace, the peak rule, and each
// integrity check firing on a program broken on purpose.

#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "analyzer/program/program_walker.h"
#include "analyzer/program/unguarded_events.h"
#include "analyzer/simulation/exact_allocator.h"
#include "tests/require_value.h"

namespace memplan {
namespace {

// Appends a buffer `name` of `category` to `p`; returns its id.
BufferId AddBuffer(TrainingProgram& p, const std::string& name, MemoryCategory category) {
  Buffer b;
  b.id = BufferId(p.buffers.size());
  b.name = name;
  b.category = category;
  p.buffers.push_back(b);
  return b.id;
}

// A step of the default kind (forward) reading `input` and writing `output`.
Step Forward(const std::string& name, BufferId input, BufferId output,
             std::vector<MemoryEvent> begin, std::vector<MemoryEvent> end) {
  Step step;
  step.name = name;
  step.inputs = {input};
  step.outputs = {output};
  step.begin = std::move(begin);
  step.end = std::move(end);
  return step;
}

// A three-step body over x (16 B), y (32 B) and z (8 B):
//   t0 load_micro_batch load  begin +x
//   t1 forward f  (reads x, writes y)  begin +y  end -x
//   t2 forward g  (reads y, writes z)  begin +z  end -y -z
// Sizes are passed to the walker directly; the buffers' symbolic sizes are not read.
TrainingProgram MicroProgram() {
  TrainingProgram p;
  const BufferId x = AddBuffer(p, "x", MemoryCategory::kOther);
  const BufferId y = AddBuffer(p, "y", MemoryCategory::kTransients);
  const BufferId z = AddBuffer(p, "z", MemoryCategory::kTransients);
  Step load;
  load.kind = StepKind::kLoadMicroBatch;
  load.name = "load";
  load.begin = {AllocEvent(x)};
  p.steps = {load, Forward("f", x, y, {AllocEvent(y)}, {FreeEvent(x)}),
             Forward("g", y, z, {AllocEvent(z)}, {FreeEvent(y), FreeEvent(z)})};
  p.setup = {0, 0};
  p.micro_batch = {0, 3};
  p.optimizer = {3, 3};
  p.loss_step = 2;
  return p;
}

const std::vector<int64_t> kSizes = {16, 32, 8};

WalkOptions TraceOn() {
  WalkOptions options;
  options.record_trace = true;
  return options;
}

// The error a walk over a hand-broken program stops with; the test fails if the walk succeeds.
std::string FirstMicroBatchError(const TrainingProgram& p) {
  ProgramWalker walker(p, kSizes, nullptr, nullptr);
  return testing::RequireError(walker.RunMicroBatch(0, 0));
}

TEST_CASE("walker: the trace of a micro-program, event by event", "[simulator][walker]") {
  const TrainingProgram p = MicroProgram();
  ProgramWalker walker(p, kSizes, nullptr, nullptr, TraceOn());
  REQUIRE(walker.RunSetup().ok());
  REQUIRE(walker.RunMicroBatch(0, 0).ok());
  REQUIRE(walker.RunOptimizerPhase(0).ok());
  // Live bytes after each event: +x 16; +y 16+32 = 48; -x 48-16 = 32; +z 32+8 = 40; -y 8; -z 0.
  CHECK(ToString(p, walker.trace()) ==
        "t0 it0 mb0 +x 16 live=16\n"
        "t1 it0 mb0 +y 32 live=48\n"
        "t1 it0 mb0 -x 16 live=32\n"
        "t2 it0 mb0 +z 8 live=40\n"
        "t2 it0 mb0 -y 32 live=8\n"
        "t2 it0 mb0 -z 8 live=0\n");
  // The peak is sampled after each Begin: 16 (t0), 48 (t1), 40 (t2); t1's Begin holds x and y.
  CHECK(walker.peak().bytes == 48);
  CHECK(walker.peak().at.step == 1);
  CHECK(walker.peak().step_name == "forward f");
  CHECK(walker.peak().breakdown[MemoryCategory::kOther] == 16);
  CHECK(walker.peak().breakdown[MemoryCategory::kTransients] == 32);
  CHECK(walker.live_stat().current == 0);
  CHECK(walker.live_stat().allocated == 56);  // 16 + 32 + 8
  CHECK(walker.live_stat().freed == 56);
  CHECK(walker.num_allocations() == 3);
}

TEST_CASE("walker: an allocator model sees the same sequence", "[simulator][walker]") {
  const TrainingProgram p = MicroProgram();
  ExactAllocator exact;
  ProgramWalker walker(p, kSizes, &exact, nullptr);
  REQUIRE(walker.RunMicroBatch(0, 0).ok());
  CHECK(walker.model_peak_allocated_bytes() == 48);
  CHECK(walker.model_peak_reserved_bytes() == 48);
  CHECK(exact.allocated_bytes() == 0);
}

TEST_CASE("walker: equal peaks keep the earliest step", "[simulator][walker]") {
  // With z at 16 B, t2's Begin holds y + z = 48 B, equal to t1's: t1 stays the peak.
  const TrainingProgram p = MicroProgram();
  ProgramWalker walker(p, {16, 32, 16}, nullptr, nullptr);
  REQUIRE(walker.RunMicroBatch(0, 0).ok());
  CHECK(walker.peak().bytes == 48);
  CHECK(walker.peak().at.step == 1);
}

TEST_CASE("walker: use before make is caught", "[simulator][walker]") {
  TrainingProgram p = MicroProgram();
  p.steps[1].inputs = {BufferId(2)};  // f reads z, which g allocates later
  CHECK_THAT(FirstMicroBatchError(p),
             Catch::Contains("step t1 (forward f) uses input 'z' before it is allocated"));
}

TEST_CASE("walker: a double free is caught", "[simulator][walker]") {
  TrainingProgram p = MicroProgram();
  p.steps[2].end.push_back(FreeEvent(BufferId(0)));  // x was freed at t1
  CHECK_THAT(FirstMicroBatchError(p),
             Catch::Contains("step t2 (forward g) frees 'x', which is not live"));
}

TEST_CASE("walker: a double allocation and a leak are caught", "[simulator][walker]") {
  TrainingProgram twice = MicroProgram();
  twice.steps[1].begin.push_back(AllocEvent(BufferId(0)));  // x is live since t0
  CHECK_THAT(FirstMicroBatchError(twice), Catch::Contains("allocates 'x', which is already live"));

  TrainingProgram leak = MicroProgram();
  leak.steps[2].end.pop_back();  // z is never freed and is not persistent
  CHECK_THAT(FirstMicroBatchError(leak),
             Catch::Contains("'z' is still live at the end of a micro-batch"));
}

// Records what the walker tells a concrete interpreter.
class Recorder final : public WalkListener {
 public:
  Status OnAlloc(BufferId buffer, BufferId storage_of) override {
    log += "+" + std::to_string(buffer.value) +
           (storage_of.valid() ? "<" + std::to_string(storage_of.value) : "") + " ";
    return OkStatus();
  }
  void OnFree(BufferId buffer, bool handed_over) override {
    log += "-" + std::to_string(buffer.value) + (handed_over ? "^" : "") + " ";
  }
  Status RunStep(const Step& step, const ExecutionPoint& at) override {
    (void)at;
    log += "run:" + step.name + " ";
    return step.name == "fail" ? Status(MakeError("kernel broke")) : OkStatus();
  }
  std::string log;
};

TEST_CASE("walker: a stated storage hand-over reaches the listener", "[simulator][walker]") {
  // The AccumulateGrad steal as the program states it: at t1's Begin the part (b3) is freed and
  // the gradient (b4) takes its storage.
  TrainingProgram p = MicroProgram();
  AddBuffer(p, "part", MemoryCategory::kTransients);
  const BufferId grad = AddBuffer(p, "grad", MemoryCategory::kTransients);
  p.buffers[grad.index()].persistent = true;
  p.steps[0].begin.push_back(AllocEvent(BufferId(3)));
  MemoryEvent take = AllocEvent(BufferId(4));
  take.storage_of = BufferId(3);
  p.steps[1].begin = {AllocEvent(BufferId(1)), FreeEvent(BufferId(3)), take};
  Recorder recorder;
  ProgramWalker walker(p, {16, 32, 8, 4, 4}, nullptr, &recorder);
  REQUIRE(walker.RunMicroBatch(0, 0).ok());
  CHECK(recorder.log == "+0 +3 run:load +1 -3^ +4<3 run:f -0 +2 run:g -1 -2 ");

  // Taking storage the Begin did not release is an inconsistent program.
  TrainingProgram bad = p;
  bad.steps[1].begin = {AllocEvent(BufferId(1)), take};
  ProgramWalker b(bad, {16, 32, 8, 4, 4}, nullptr, nullptr);
  const std::string error = testing::RequireError(b.RunMicroBatch(0, 0));
  CHECK(error.find("gives 'grad' the storage of 'part'") != std::string::npos);
}

TEST_CASE("walker: a failing step names the step", "[simulator][walker]") {
  TrainingProgram p = MicroProgram();
  p.steps[1].name = "fail";
  Recorder recorder;
  ProgramWalker walker(p, kSizes, nullptr, &recorder);
  const std::string error = testing::RequireError(walker.RunMicroBatch(0, 0));
  CHECK(error.find("step 't1 forward fail") != std::string::npos);
  CHECK(error.find("kernel broke") != std::string::npos);
}

}  // namespace
}  // namespace memplan
