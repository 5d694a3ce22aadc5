#include "analyzer/program/program_integrity.h"

#include <vector>

#include "analyzer/program/program_walker.h"

namespace memplan {
namespace {

class IntegrityCheck {
 public:
  explicit IntegrityCheck(const TrainingProgram& program) : program_(program) {}

  Status Run() {
    MEMPLAN_RETURN_IF_ERROR(CheckLayout());
    MEMPLAN_RETURN_IF_ERROR(CheckIds());
    // The walker owns the checks (double alloc, double free, use before make or after free,
    // leaks at the end of a micro-batch); every buffer counts one byte here, sizes do not matter.
    ProgramWalker walker(program_, std::vector<int64_t>(program_.buffers.size(), 1),
                         /*model=*/nullptr, /*listener=*/nullptr);
    MEMPLAN_RETURN_IF_ERROR(walker.RunSetup());
    // Two optimizer steps of two micro-batches exercise every guard both ways.
    for (int iteration = 0; iteration < 2; ++iteration) {
      for (int micro_batch = 0; micro_batch < 2; ++micro_batch)
        MEMPLAN_RETURN_IF_ERROR(walker.RunMicroBatch(iteration, micro_batch));
      MEMPLAN_RETURN_IF_ERROR(walker.RunOptimizerPhase(iteration));
    }
    return walker.CheckOnlyPersistentLive("the end of the program");
  }

 private:
  Status CheckLayout() const {
    const auto n = static_cast<LogicalTime>(program_.steps.size());
    if (program_.setup.begin != 0 || program_.setup.end != program_.micro_batch.begin ||
        program_.micro_batch.end != program_.optimizer.begin || program_.optimizer.end != n ||
        program_.setup.size() < 0 || program_.micro_batch.size() < 0 ||
        program_.optimizer.size() < 0) {
      return MakeError("program phases (setup, micro_batch, optimizer) do not tile its " +
                       std::to_string(n) + " steps");
    }
    if (!program_.micro_batch.contains(program_.loss_step))
      return MakeError("program's loss step " + std::to_string(program_.loss_step) +
                       " is outside the micro-batch body");
    // Each loss term names its own kLoss (and, where a gradient reaches it, kLossBackward) step;
    // hand-built programs without terms name none.
    for (const LossTerm& term : program_.loss_terms) {
      if (!program_.micro_batch.contains(term.step) ||
          program_.step(term.step).kind != StepKind::kLoss || term.step > program_.loss_step)
        return MakeError("a loss term's step " + std::to_string(term.step) +
                         " is not a loss step up to the program's loss step");
      if (term.backward_step >= 0 &&
          (!program_.micro_batch.contains(term.backward_step) ||
           program_.step(term.backward_step).kind != StepKind::kLossBackward))
        return MakeError("a loss term's backward step " + std::to_string(term.backward_step) +
                         " is not a loss backward step");
    }
    for (size_t i = 0; i < program_.buffers.size(); ++i)
      if (program_.buffers[i].id.index() != i || !program_.buffers[i].id.valid())
        return MakeError("buffer '" + program_.buffers[i].name + "' has id " +
                         std::to_string(program_.buffers[i].id.value) + " at position " +
                         std::to_string(i));
    return OkStatus();
  }

  bool Valid(BufferId b) const { return b.valid() && b.index() < program_.buffers.size(); }

  Status CheckIds() const {
    for (LogicalTime t = 0; t < static_cast<LogicalTime>(program_.steps.size()); ++t) {
      const Step& s = program_.step(t);
      auto events_ok = [&](const std::vector<MemoryEvent>& events) {
        for (const auto& e : events) {
          if (!Valid(e.buffer)) return false;
          if (e.guard != MemoryEvent::Guard::kNone && !Valid(e.guard_buffer)) return false;
          if (e.storage_of.valid() && !Valid(e.storage_of)) return false;
        }
        return true;
      };
      if (!events_ok(s.begin) || !events_ok(s.end))
        return MakeError("step t" + std::to_string(t) + " (" + s.name +
                         ") names a buffer that does not exist");
    }
    return OkStatus();
  }

  const TrainingProgram& program_;
};

}  // namespace

Status VerifyProgram(const TrainingProgram& program) { return IntegrityCheck(program).Run(); }

}  // namespace memplan
