#include "analyzer/recompute/chain.h"

#include <cmath>

namespace memplan {

int64_t Chain::InputBytesOf(int k) const {
  MEMPLAN_CHECK(k >= 0 && k < num_stages());
  return k == 0 ? input_bytes : stages[static_cast<size_t>(k - 1)].output_bytes;
}

int64_t Chain::InputGradientBytesOf(int k) const {
  MEMPLAN_CHECK(k >= 0 && k < num_stages());
  return k == 0 ? 0 : stages[static_cast<size_t>(k - 1)].output_bytes;
}

int64_t Chain::StoredBytesOf(int k) const {
  MEMPLAN_CHECK(k >= 0 && k < num_stages());
  const ChainStage& s = stages[static_cast<size_t>(k)];
  return s.output_bytes + s.saved_bytes;
}

Status ValidateChain(const Chain& chain) {
  if (chain.stages.empty()) return MakeError("the recompute chain has no stages");
  if (chain.input_bytes < 0) return MakeError("the recompute chain has a negative input size");
  for (int k = 0; k < chain.num_stages(); ++k) {
    const ChainStage& s = chain.stages[static_cast<size_t>(k)];
    const bool bad_time = !std::isfinite(s.forward_time) || !std::isfinite(s.backward_time) ||
                          s.forward_time < 0 || s.backward_time < 0;
    const bool bad_size = s.output_bytes < 0 || s.saved_bytes < 0 || s.forward_overhead_bytes < 0 ||
                          s.backward_overhead_bytes < 0;
    if (bad_time || bad_size) {
      return MakeError("recompute chain stage " + std::to_string(k) + " ('" + s.name +
                       "') has a negative or non-finite " + (bad_time ? "time" : "size"));
    }
  }
  return OkStatus();
}

}  // namespace memplan
