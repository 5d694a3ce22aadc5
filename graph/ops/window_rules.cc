#include "graph/ops/window_rules.h"

#include "graph/ops/shape_helpers.h"

namespace memplan {

Expected<WindowAttributes> ReadWindowAttributes(const Node& node, size_t spatial_rank,
                                                std::vector<int64_t> kernel) {
  auto window = ReadWindowAttributes(node.attributes, spatial_rank, std::move(kernel),
                                     /*read_ceil_mode=*/true);
  if (!window.ok()) return MakeError(NodeError(node, window.error().message));
  return window;
}

Expected<std::optional<Dim>> WindowOutputDim(const Node& node, const Dim& in,
                                             const WindowAttributes& window, size_t axis) {
  auto dim = WindowOutputDim(in, window, axis);
  if (!dim.ok()) return MakeError(NodeError(node, dim.error().message));
  return dim;
}

}  // namespace memplan
