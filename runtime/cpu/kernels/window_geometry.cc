#include "runtime/cpu/kernels/window_geometry.h"

#include <string>

namespace memplan {

TensorShape WindowGeometry::OutputShape(int64_t out_channels) const {
  if (spatial_rank == 1) return {batch, out_channels, w.output};
  if (spatial_rank == 2) return {batch, out_channels, h.output, w.output};
  return {batch, out_channels, d.output, h.output, w.output};
}

Expected<WindowGeometry> ComputeWindowGeometry(std::string_view op, const Attributes& attributes,
                                               const TensorShape& input,
                                               const std::vector<int64_t>& kernel,
                                               bool allow_ceil_mode, size_t max_spatial_rank) {
  const std::string name(op);
  if (input.size() < 3 || input.size() > 2 + max_spatial_rank) {
    return MakeError(
        name +
        (max_spatial_rank == 3 ? ": only 1-D, 2-D and 3-D windows" : ": only 1-D and 2-D windows") +
        " are supported, input is " + ShapeToString(input));
  }
  const size_t rank = input.size() - 2;
  if (kernel.size() != rank) {
    return MakeError(name + ": kernel has " + std::to_string(kernel.size()) +
                     " dims for an input of spatial rank " + std::to_string(rank));
  }
  auto window = ReadWindowAttributes(attributes, rank, kernel, allow_ceil_mode);
  if (!window.ok()) return MakeError(name + ": " + window.error().message);

  WindowGeometry g;
  g.batch = input[0];
  g.channels = input[1];
  g.spatial_rank = static_cast<int64_t>(rank);
  for (size_t i = 0; i < rank; ++i) {
    // The last spatial axis is always w, the one before it h, a third from the end d.
    auto axis = ResolveWindowAxis(*window, i, input[2 + i]);
    if (!axis.ok()) return MakeError(name + ": " + axis.error().message);
    const size_t from_end = rank - 1 - i;
    (from_end == 0 ? g.w : from_end == 1 ? g.h : g.d) = *axis;
  }
  return g;
}

}  // namespace memplan
