#include "analyzer/cost/collective_cost.h"

#include <algorithm>

#include "analyzer/program/step_phase.h"

namespace memplan {

double CollectiveSeconds(CollectiveKind kind, int64_t payload_bytes, int64_t ranks,
                         const CollectiveCostOptions& options) {
  if (ranks <= 1 || payload_bytes <= 0) return 0;
  const bool crosses_nodes = options.nodes > 1;
  const double link = crosses_nodes ? std::min(options.intra_node.bytes_per_second,
                                               options.inter_node.bytes_per_second)
                                    : options.intra_node.bytes_per_second;
  const double hop = crosses_nodes ? std::max(options.intra_node.hop_latency_seconds,
                                              options.inter_node.hop_latency_seconds)
                                   : options.intra_node.hop_latency_seconds;
  const double n = static_cast<double>(ranks);
  const double passes = kind == CollectiveKind::kAllReduce ? 2.0 : 1.0;
  return passes * (n - 1) / n * static_cast<double>(payload_bytes) /
             (link * options.bus_efficiency) +
         passes * (n - 1) * hop;
}

double CollectiveSeconds(const Collective& c, int64_t ranks, const CollectiveCostOptions& options) {
  const int64_t nodes = std::max<int64_t>(1, options.nodes);
  switch (c.group) {
    case CollectiveGroup::kAllRanks:
      return CollectiveSeconds(c.kind, c.payload_bytes, ranks, options);
    case CollectiveGroup::kWithinNode: {
      CollectiveCostOptions one_node = options;
      one_node.nodes = 1;
      return CollectiveSeconds(c.kind, c.payload_bytes, ranks / nodes, one_node);
    }
    case CollectiveGroup::kAcrossNodes: {
      // One rank per node: the ring's every hop crosses the network.
      CollectiveCostOptions network = options;
      network.intra_node = options.inter_node;
      return CollectiveSeconds(c.kind, c.payload_bytes, nodes, network);
    }
  }
  return 0;
}

CommunicationEstimate EstimateCommunication(const TrainingProgram& program,
                                            int64_t accumulation_steps,
                                            const StepTimeEstimate& compute,
                                            const CollectiveCostOptions& options) {
  CommunicationEstimate e;
  const int64_t ranks = program.data_parallel_ranks;
  if (ranks <= 1) return e;
  const bool ddp = program.data_parallel_strategy == "ddp";
  for (LogicalTime t = 0; t < static_cast<LogicalTime>(program.steps.size()); ++t) {
    const Step& s = program.step(t);
    if (s.kind != StepKind::kCollective) continue;
    const double seconds = CollectiveSeconds(s.collective, ranks, options);
    switch (PhaseOfStep(program, t)) {
      case StepPhase::kForward:
        e.forward_seconds += seconds;
        break;
      case StepPhase::kBackward:
        e.backward_seconds += seconds;
        break;
      default:
        e.optimizer_seconds += seconds;
        break;
    }
  }
  const double k = static_cast<double>(accumulation_steps);
  // DDP: no_sync on all but the last micro-batch, so its buckets are reduced once per step.
  const double reducing_micro_batches = ddp ? 1.0 : k;
  const double forward_exposed = std::max(0.0, e.forward_seconds - compute.forward_seconds);
  const double backward_exposed =
      std::max(0.0, e.backward_seconds - (compute.backward_seconds + compute.recompute_seconds));
  e.exposed_seconds =
      k * forward_exposed + reducing_micro_batches * backward_exposed + e.optimizer_seconds;
  e.total_seconds =
      k * e.forward_seconds + reducing_micro_batches * e.backward_seconds + e.optimizer_seconds;
  return e;
}

}  // namespace memplan
