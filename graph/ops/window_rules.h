#pragma once
// The shape rules' view of the shared window geometry (graph/ops/geometry/window.h): the same
// functions, with errors that name the node.

#include <cstdint>
#include <optional>
#include <vector>

#include "graph/dim.h"
#include "graph/expected.h"
#include "graph/graph.h"
#include "graph/ops/geometry/window.h"

namespace memplan {

// ReadWindowAttributes of `node`'s attributes (ceil_mode included), errors naming the node.
Expected<WindowAttributes> ReadWindowAttributes(const Node& node, size_t spatial_rank,
                                                std::vector<int64_t> kernel);

// WindowOutputDim, errors naming the node.
Expected<std::optional<Dim>> WindowOutputDim(const Node& node, const Dim& in,
                                             const WindowAttributes& window, size_t axis);

}  // namespace memplan
