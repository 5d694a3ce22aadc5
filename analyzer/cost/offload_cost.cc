#include "analyzer/cost/offload_cost.h"

#include <algorithm>

namespace memplan {
namespace {

// The bytes a transfer moves over the link: its device-side buffers.
int64_t PayloadBytes(const Step& step, const std::vector<int64_t>& buffer_bytes) {
  const std::vector<BufferId>& device =
      step.transfer.direction == TransferDirection::kToHost ? step.inputs : step.outputs;
  int64_t bytes = 0;
  for (BufferId b : device) bytes += buffer_bytes[b.index()];
  return bytes;
}

}  // namespace

double TransferSeconds(int64_t bytes, const OffloadCostOptions& options) {
  MEMPLAN_CHECK(options.host_link.bytes_per_second > 0 && options.copy_efficiency > 0);
  return static_cast<double>(bytes) /
             (options.host_link.bytes_per_second * options.copy_efficiency) +
         options.host_link.hop_latency_seconds;
}

OffloadEstimate EstimateOffload(const TrainingProgram& program,
                                const std::vector<int64_t>& buffer_bytes,
                                int64_t accumulation_steps, const StepTimeEstimate& compute,
                                const OffloadCostOptions& options) {
  MEMPLAN_CHECK(accumulation_steps >= 1 && buffer_bytes.size() == program.buffers.size());
  OffloadEstimate e;
  // Seconds per micro-batch (body) and per step (optimizer phase), by what they hide behind.
  double body_forward = 0, body_backward = 0, body_waited = 0;
  double step_backward = 0, step_waited = 0;
  int64_t body_bytes = 0, step_bytes = 0;
  for (LogicalTime t = 0; t < static_cast<LogicalTime>(program.steps.size()); ++t) {
    const Step& s = program.step(t);
    if (s.kind != StepKind::kTransfer) continue;
    const int64_t bytes = PayloadBytes(s, buffer_bytes);
    const double seconds = TransferSeconds(bytes, options);
    const bool in_body = program.micro_batch.contains(t);
    (in_body ? body_bytes : step_bytes) += bytes;
    switch (s.transfer.overlap) {
      case TransferOverlap::kForward:
        (in_body ? body_forward : step_waited) += seconds;
        break;
      case TransferOverlap::kBackward:
        (in_body ? body_backward : step_backward) += seconds;
        break;
      case TransferOverlap::kNone:
        (in_body ? body_waited : step_waited) += seconds;
        break;
    }
  }
  const double k = static_cast<double>(accumulation_steps);
  const double backward_compute = compute.backward_seconds + compute.recompute_seconds;
  e.transfer_bytes = accumulation_steps * body_bytes + step_bytes;
  e.transfer_seconds =
      k * (body_forward + body_backward + body_waited) + step_backward + step_waited;
  e.exposed_transfer_seconds = k * std::max(0.0, body_forward - compute.forward_seconds) +
                               (k - 1) * std::max(0.0, body_backward - backward_compute) +
                               std::max(0.0, body_backward + step_backward - backward_compute) +
                               k * body_waited + step_waited;
  if (OffloadsOptimizer(program.offload)) {
    auto bytes = [&](BufferId b) { return b.valid() ? buffer_bytes[b.index()] : int64_t{0}; };
    for (const ParameterBuffers& pb : program.parameters) {
      if (!pb.host_parameter.valid()) continue;
      int64_t states = 0;
      for (BufferId s : pb.optimizer_states) states += bytes(s);
      e.host_optimizer_bytes += 2 * bytes(pb.host_parameter) + bytes(pb.host_gradient) + 2 * states;
      if (pb.working.valid() && program.buffer(pb.working).on_host())
        e.host_optimizer_bytes += bytes(pb.working);
    }
    e.host_optimizer_seconds =
        static_cast<double>(e.host_optimizer_bytes) / options.host_memory_bytes_per_second;
  }
  return e;
}

}  // namespace memplan
