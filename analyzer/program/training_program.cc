#include "analyzer/program/training_program.h"

#include <sstream>

namespace memplan {

int64_t TrainingProgram::CountSteps(StepKind kind) const {
  int64_t count = 0;
  for (LogicalTime t = micro_batch.begin; t < micro_batch.end; ++t)
    if (steps[static_cast<size_t>(t)].kind == kind) ++count;
  return count;
}

namespace {

std::string EventToString(const TrainingProgram& program, const MemoryEvent& e) {
  std::string s = (e.action == MemoryEvent::Action::kAlloc ? "+" : "-");
  s += program.buffer(e.buffer).name;
  if (e.guard != MemoryEvent::Guard::kNone) {
    s += (e.guard == MemoryEvent::Guard::kIfLive ? "[if live " : "[if not live ");
    s += program.buffer(e.guard_buffer).name + "]";
  }
  return s;
}

}  // namespace

std::string StepToString(const TrainingProgram& program, LogicalTime t) {
  const Step& step = program.step(t);
  std::ostringstream out;
  out << "t" << t << " " << StepKindName(step.kind);
  if (!step.name.empty()) out << " " << step.name;
  if (!step.op_type.empty()) out << " (" << step.op_type << ")";
  if (step.compute_dtype != DType::kUndefined) out << " " << DTypeName(step.compute_dtype);
  if (!step.begin.empty()) {
    out << "  begin";
    for (const auto& e : step.begin) out << " " << EventToString(program, e);
  }
  if (!step.end.empty()) {
    out << "  end";
    for (const auto& e : step.end) out << " " << EventToString(program, e);
  }
  return out.str();
}

std::string ToString(const TrainingProgram& program) {
  std::ostringstream out;
  out << "training program: loss=" << LossKindName(program.loss)
      << " optimizer=" << OptimizerKindName(program.optimizer_kind)
      << " precision=" << PrecisionName(program.precision)
      << " zero_grad=" << ZeroGradModeName(program.zero_grad)
      << " accumulation_steps=" << program.accumulation_steps << "\n";
  out << "buffers:\n";
  for (const Buffer& b : program.buffers) {
    out << "  b" << b.id.value << " " << b.name << "  " << MemoryCategoryName(b.category) << " "
        << BufferRoleName(b.role) << " " << DTypeName(b.dtype) << " "
        << b.shape.ToString(program.symbols) << " bytes=" << b.bytes.ToString(program.symbols);
    if (b.on_host()) out << " host";
    if (b.persistent) out << " persistent";
    if (b.held_for_backward) out << " held_for_backward";
    out << "\n";
  }
  auto phase = [&](const std::string& title, StepRange range) {
    out << title << ":\n";
    for (LogicalTime t = range.begin; t < range.end; ++t)
      out << "  " << StepToString(program, t) << "\n";
  };
  phase("setup", program.setup);
  phase("micro_batch (x" + std::to_string(program.accumulation_steps) + ")", program.micro_batch);
  phase("optimizer", program.optimizer);
  return out.str();
}

}  // namespace memplan
