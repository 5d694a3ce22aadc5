#include "graph/ops/normalization_rules.h"

#include "graph/ops/common_rules.h"
#include "graph/ops/shape_helpers.h"

namespace memplan {

Expected<Shape> TrailingNormStatShape(const OpContext& ctx, int64_t axis) {
  const Shape& x = ctx.inputs.at(0).shape;
  if (!x.known) return Shape::Unknown();
  MEMPLAN_TRY(int64_t normalized, NormalizeAxis(axis, x.rank(), ctx.node));
  Shape stat;
  for (size_t i = 0; i < x.rank(); ++i)
    stat.dims.push_back(static_cast<int64_t>(i) < normalized ? x.dims[i] : Dim(1));
  return stat;
}

Shape StatShapeOrUnknown(const OpContext& ctx, int64_t axis) {
  auto stat = TrailingNormStatShape(ctx, axis);
  return stat ? *stat : Shape::Unknown();
}

SavedTensor OutputOrExtra(const OpContext& ctx, size_t index, std::string name, DType dtype,
                          Shape shape) {
  if (index < ctx.outputs.size() && ctx.outputs[index].present)
    return SaveOutput(static_cast<int>(index));
  return SaveExtra(std::move(name), dtype, std::move(shape));
}

}  // namespace memplan
