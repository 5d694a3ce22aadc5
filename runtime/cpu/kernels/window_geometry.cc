#include "runtime/cpu/kernels/window_geometry.h"

#include <string>

namespace memplan {

TensorShape WindowGeometry::OutputShape(int64_t out_channels) const {
  if (spatial_rank == 1) return {batch, out_channels, w.output};
  return {batch, out_channels, h.output, w.output};
}

Expected<WindowGeometry> ComputeWindowGeometry(std::string_view op, const Attributes& attributes,
                                               const TensorShape& input,
                                               const std::vector<int64_t>& kernel,
                                               bool allow_ceil_mode) {
  const std::string name(op);
  if (input.size() != 3 && input.size() != 4) {
    return MakeError(name + ": only 1-D and 2-D windows are supported, input is " +
                     ShapeToString(input));
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
    // The last spatial axis is always w; a 2-D window's first axis is h.
    auto axis = ResolveWindowAxis(*window, i, input[2 + i]);
    if (!axis.ok()) return MakeError(name + ": " + axis.error().message);
    ((i + 1 == rank) ? g.w : g.h) = *axis;
  }
  return g;
}

}  // namespace memplan
