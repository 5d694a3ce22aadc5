#pragma once
// The CPU kernels' view of the shared window geometry (graph/ops/geometry/window.h) resolved
// against a concrete input. Windows are lifted to 3-D: a 1-D window has a height and a depth of
// 1, a 2-D one a depth of 1 (the identity axis d), so the kernels have one loop nest; 3-D
// windows (Conv3d: torchvision's video models) only where the caller allows them.

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
  int64_t spatial_rank = 2;  // 1, 2 or 3 as given; the axes below are always 3-D
  WindowAxis d;              // depth: the first of three spatial axes, else the identity
  WindowAxis h;
  WindowAxis w;

  // The output shape [N, C_out, spatial...] in the input's spatial rank.
  TensorShape OutputShape(int64_t out_channels) const;
};

// `input` is [N, C, spatial...] with 1 to `max_spatial_rank` (2 or 3) spatial dims; `kernel` is
// the window's spatial size (from kernel_shape or the weight). ceil_mode is read only when
// `allow_ceil_mode`. Errors name `op`.
Expected<WindowGeometry> ComputeWindowGeometry(std::string_view op, const Attributes& attributes,
                                               const TensorShape& input,
                                               const std::vector<int64_t>& kernel,
                                               bool allow_ceil_mode, size_t max_spatial_rank = 2);

}  // namespace memplan
