#include "analyzer/program_integrity.h"

#include <vector>

namespace memplan {
namespace {

class IntegrityCheck {
 public:
  explicit IntegrityCheck(const TrainingProgram& program)
      : program_(program), live_(program.buffers.size(), 0) {}

  Status Run() {
    MEMPLAN_RETURN_IF_ERROR(CheckLayout());
    MEMPLAN_RETURN_IF_ERROR(CheckIds());
    MEMPLAN_RETURN_IF_ERROR(RunRange(program_.setup));
    // Two optimizer steps of two micro-batches exercise every guard both ways.
    for (int iteration = 0; iteration < 2; ++iteration) {
      for (int micro_batch = 0; micro_batch < 2; ++micro_batch) {
        MEMPLAN_RETURN_IF_ERROR(RunRange(program_.micro_batch));
        MEMPLAN_RETURN_IF_ERROR(OnlyPersistentLive("the end of a micro-batch"));
      }
      MEMPLAN_RETURN_IF_ERROR(RunRange(program_.optimizer));
    }
    return OnlyPersistentLive("the end of the program");
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
        }
        return true;
      };
      if (!events_ok(s.begin) || !events_ok(s.end))
        return MakeError("step t" + std::to_string(t) + " (" + s.name +
                         ") names a buffer that does not exist");
    }
    return OkStatus();
  }

  std::string Where(LogicalTime t) const {
    const Step& s = program_.step(t);
    return "step t" + std::to_string(t) + " (" + std::string(StepKindName(s.kind)) + " " + s.name +
           ")";
  }

  Status Apply(LogicalTime t, const MemoryEvent& e) {
    if (e.guard != MemoryEvent::Guard::kNone) {
      bool guard_live = live_[e.guard_buffer.index()] != 0;
      if ((e.guard == MemoryEvent::Guard::kIfLive) != guard_live) return OkStatus();
    }
    uint8_t& live = live_[e.buffer.index()];
    const std::string& name = program_.buffer(e.buffer).name;
    if (e.action == MemoryEvent::Action::kAlloc) {
      if (live) return MakeError(Where(t) + " allocates '" + name + "', which is already live");
      live = 1;
    } else {
      if (!live) return MakeError(Where(t) + " frees '" + name + "', which is not live");
      live = 0;
    }
    return OkStatus();
  }

  // Every buffer the step's kernel touches must be live between its Begin and End.
  Status CheckOperands(LogicalTime t) const {
    const Step& s = program_.step(t);
    auto check = [&](BufferId b, const char* what) -> Status {
      if (!b.valid()) return OkStatus();
      if (!Valid(b))
        return MakeError(Where(t) + " names a " + what + " buffer that does not exist");
      if (!live_[b.index()])
        return MakeError(Where(t) + " uses " + what + " '" + program_.buffer(b).name +
                         "' before it is allocated or after it is freed");
      return OkStatus();
    };
    // An accumulation's part may have been stolen into the gradient at Begin.
    if (s.kind != StepKind::kAccumulateGradient)
      for (BufferId b : s.inputs) MEMPLAN_RETURN_IF_ERROR(check(b, "input"));
    for (BufferId b : s.outputs) MEMPLAN_RETURN_IF_ERROR(check(b, "output"));
    for (const CastOp& c : s.casts) {
      MEMPLAN_RETURN_IF_ERROR(check(c.source, "cast source"));
      MEMPLAN_RETURN_IF_ERROR(check(c.target, "cast"));
    }
    for (BufferId b : s.extras) MEMPLAN_RETURN_IF_ERROR(check(b, "saved extra"));
    for (BufferId b : s.saved) MEMPLAN_RETURN_IF_ERROR(check(b, "saved"));
    for (BufferId b : s.output_gradients) MEMPLAN_RETURN_IF_ERROR(check(b, "output gradient"));
    for (const GradientWrite& w : s.input_gradients) {
      MEMPLAN_RETURN_IF_ERROR(check(w.target, "input gradient"));
      MEMPLAN_RETURN_IF_ERROR(check(w.part, "gradient part"));
    }
    return check(s.workspace, "workspace");
  }

  Status RunRange(StepRange range) {
    for (LogicalTime t = range.begin; t < range.end; ++t) {
      const Step& s = program_.step(t);
      for (const auto& e : s.begin) MEMPLAN_RETURN_IF_ERROR(Apply(t, e));
      MEMPLAN_RETURN_IF_ERROR(CheckOperands(t));
      for (const auto& e : s.end) MEMPLAN_RETURN_IF_ERROR(Apply(t, e));
    }
    return OkStatus();
  }

  Status OnlyPersistentLive(const char* when) const {
    for (size_t i = 0; i < live_.size(); ++i)
      if (live_[i] && !program_.buffers[i].persistent)
        return MakeError("buffer '" + program_.buffers[i].name + "' is still live at " + when +
                         " but is not persistent (a leak)");
    return OkStatus();
  }

  const TrainingProgram& program_;
  std::vector<uint8_t> live_;
};

}  // namespace

Status VerifyProgram(const TrainingProgram& program) { return IntegrityCheck(program).Run(); }

}  // namespace memplan
