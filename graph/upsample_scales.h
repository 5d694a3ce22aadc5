#pragma once
// Upsample (deprecated since opset 10, still written by old exporters) has no registry entry: its
// output shape is libonnx's, floor(dim * scale). A scale of 0 gave a planned, empty output and a
// negative one a negative size, exit 0. ONNX states each scale "takes value greater than or equal
// to 1" (Upsample-7 and -9); Resize's scales are checked by its shape rule.

#include "graph/expected.h"
#include "graph/graph.h"

namespace memplan {

// An error naming the first Upsample whose known scales (the `scales` attribute of Upsample-7, the
// constant `scales` input of Upsample-9) hold a value below 1, NaN or infinity.
Status CheckUpsampleScales(const Graph& graph);

}  // namespace memplan
