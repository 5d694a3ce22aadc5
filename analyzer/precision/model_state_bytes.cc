#include "analyzer/precision/model_state_bytes.h"

namespace memplan {

ModelStateBytes ModelStateBytesOf(const TrainingProgram& program,
                                  const std::vector<int64_t>& buffer_bytes) {
  auto bytes = [&](BufferId b) -> int64_t {
    if (!b.valid()) return 0;
    MEMPLAN_CHECK(b.index() < buffer_bytes.size()) << "buffer sizes evaluated";
    return buffer_bytes[b.index()];
  };
  ModelStateBytes total;
  for (const ParameterBuffers& pb : program.parameters) {
    if (pb.working.valid()) {
      total.parameters += bytes(pb.working);
      total.master_weights += bytes(pb.master);
    } else {
      total.parameters += bytes(pb.master);
    }
    total.gradients += bytes(pb.gradient);
    for (BufferId s : pb.optimizer_states) total.optimizer_state += bytes(s);
  }
  return total;
}

}  // namespace memplan
