#include "analyzer/training_program.h"

#include <sstream>

namespace memplan {

std::string_view BufferRoleName(BufferRole role) {
  switch (role) {
    case BufferRole::kInput:
      return "input";
    case BufferRole::kLabel:
      return "label";
    case BufferRole::kValue:
      return "value";
    case BufferRole::kCast:
      return "cast";
    case BufferRole::kSavedExtra:
      return "saved_extra";
    case BufferRole::kRecomputed:
      return "recomputed";
    case BufferRole::kLoss:
      return "loss";
    case BufferRole::kValueGradient:
      return "value_gradient";
    case BufferRole::kGradientPart:
      return "gradient_part";
    case BufferRole::kParameterMaster:
      return "parameter";
    case BufferRole::kParameterWorking:
      return "parameter_working_copy";
    case BufferRole::kParameterGradient:
      return "parameter_gradient";
    case BufferRole::kOptimizerState:
      return "optimizer_state";
    case BufferRole::kMasterGradient:
      return "master_gradient";
    case BufferRole::kWorkspace:
      return "workspace";
    case BufferRole::kScalar:
      return "scalar";
    case BufferRole::kQuantizationState:
      return "quantization_state";
    case BufferRole::kOffloadCopy:
      return "offload_copy";
    case BufferRole::kOptimizerTransient:
      return "optimizer_transient";
  }
  return "value";
}

std::string_view StepKindName(StepKind kind) {
  switch (kind) {
    case StepKind::kAllocateParameters:
      return "allocate_parameters";
    case StepKind::kInitLossScaler:
      return "init_loss_scaler";
    case StepKind::kLoadMicroBatch:
      return "load_micro_batch";
    case StepKind::kForward:
      return "forward";
    case StepKind::kLoss:
      return "loss";
    case StepKind::kLossBackward:
      return "loss_backward";
    case StepKind::kRecompute:
      return "recompute";
    case StepKind::kBackward:
      return "backward";
    case StepKind::kAccumulateGradient:
      return "accumulate_gradient";
    case StepKind::kCastGradient:
      return "cast_gradient";
    case StepKind::kUnscaleAndCheckOverflow:
      return "unscale_and_check_overflow";
    case StepKind::kClipGradients:
      return "clip_gradients";
    case StepKind::kOptimizerStep:
      return "optimizer_step";
    case StepKind::kZeroGradients:
      return "zero_gradients";
    case StepKind::kCollective:
      return "collective";
    case StepKind::kBucketCopy:
      return "bucket_copy";
    case StepKind::kTransfer:
      return "transfer";
  }
  return "forward";
}

std::string_view TransferDirectionName(TransferDirection direction) {
  return direction == TransferDirection::kToHost ? "to_host" : "to_device";
}

std::string_view CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kAllReduce:
      return "all_reduce";
  }
  return "all_reduce";
}

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
