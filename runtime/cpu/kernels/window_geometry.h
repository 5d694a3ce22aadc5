#pragma once
// The CPU kernels' view of the shared window geometry (graph/ops/geometry/window.h) resolved
// against a concrete input. 1-D windows are lifted to 2-D with a height of 1, so the kernels have
// one 2-D loop nest.

#include <cstdint>
#include <string_view>
#include <vector>

#include "graph/attributes.h"
#include "graph/expected.h"
#include "graph/ops/geometry/window.h"
#include "runtime/tensor.h"

namespace memplan {

struct WindowGeometry {
  int64_t batch = 0;
  int64_t channels = 0;
  int64_t spatial_rank = 2;  // 1 or 2 as given; the axes below are always 2-D
  WindowAxis h;
  WindowAxis w;

  // The output shape [N, C_out, spatial...] in the input's spatial rank.
  TensorShape OutputShape(int64_t out_channels) const;
};

// `input` is [N, C, spatial...] with 1 or 2 spatial dims; `kernel` is the window's spatial size
// (from kernel_shape or the weight). ceil_mode is read only when `allow_ceil_mode`. Errors name
// `op`.
Expected<WindowGeometry> ComputeWindowGeometry(std::string_view op, const Attributes& attributes,
                                               const TensorShape& input,
                                               const std::vector<int64_t>& kernel,
                                               bool allow_ceil_mode);

}  // namespace memplan
