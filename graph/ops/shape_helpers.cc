#include "graph/ops/shape_helpers.h"

#include <algorithm>

#include "graph/integer_dtypes.h"

namespace memplan {

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

Status RefuseZeroDivisor(const Node& node, const TensorInfo& divisor) {
  if (!IsInteger(divisor.dtype) || !divisor.contents) return OkStatus();
  for (const Dim& d : *divisor.contents)
    if (d.constant_value() == 0)
      return MakeError(NodeError(node, "an integer division by zero in a shape computation"));
  return OkStatus();
}

std::vector<TensorInfo> SingleOutput(DType dtype, Shape shape) {
  TensorInfo t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  return {t};
}

}  // namespace memplan
