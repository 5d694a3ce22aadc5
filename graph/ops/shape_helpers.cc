#include "graph/ops/shape_helpers.h"

#include <algorithm>

namespace memplan {

Expected<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  if (!a.known || !b.known) return Shape::Unknown();
  size_t rank = std::max(a.rank(), b.rank());
  Shape out;
  out.dims.resize(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right.
    const Dim* da = i < rank - a.rank() ? nullptr : &a.dims[i - (rank - a.rank())];
    const Dim* db = i < rank - b.rank() ? nullptr : &b.dims[i - (rank - b.rank())];
    if (!da) {
      out.dims[i] = *db;
    } else if (!db) {
      out.dims[i] = *da;
    } else if (*da == *db) {
      out.dims[i] = *da;
    } else if (da->constant_value() == 1) {
      out.dims[i] = *db;
    } else if (db->constant_value() == 1) {
      out.dims[i] = *da;
    } else if (da->is_constant() && db->is_constant()) {
      return MakeError("cannot broadcast dims " + std::to_string(*da->constant_value()) + " and " +
                       std::to_string(*db->constant_value()));
    } else if (da->is_constant()) {
      out.dims[i] = *da;
    } else {
      out.dims[i] = *db;
    }
  }
  return out;
}

Expected<int64_t> NormalizeAxis(int64_t axis, size_t rank, const Node& node) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    return MakeError(NodeError(node, "axis " + std::to_string(axis) + " is out of range for rank " +
                                         std::to_string(rank)));
  }
  return axis < 0 ? axis + r : axis;
}

std::string NodeError(const Node& node, const std::string& what) {
  return "node '" + node.name + "' (" + node.op_type + "): " + what;
}

std::vector<TensorInfo> SingleOutput(DType dtype, Shape shape) {
  TensorInfo t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  return {t};
}

}  // namespace memplan
