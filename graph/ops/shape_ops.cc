#include "graph/ops/common_rules.h"
#include "graph/ops/op_families.h"
#include "graph/ops/op_registry.h"
#include "graph/ops/shape_ops_folding.h"
#include "graph/ops/shape_ops_internal.h"

namespace memplan {

OpSchema ShapeOpSchema(std::string op_type) {
  OpSchema schema;
  schema.op_type = std::move(op_type);
  schema.amp = AmpCategory::kFollowInputs;
  schema.amp_source = kFollowsInputsAmp;
  schema.saved_source = kNothingSaved;
  return schema;
}

OpCost NoCost(const OpContext&) { return OpCost{}; }

OpCost MovementCost(const OpContext& ctx) {
  OpCost cost;
  for (const auto& in : ctx.inputs)
    if (in.present && in.shape.known) cost.bytes_read += in.Bytes();
  for (const auto& out : ctx.outputs)
    if (out.present && out.shape.known) cost.bytes_written += out.Bytes();
  return cost;
}

TensorInfo MakeOutput(DType dtype, Shape shape, std::optional<std::vector<Dim>> contents) {
  TensorInfo t;
  t.dtype = dtype;
  if (contents && static_cast<int64_t>(contents->size()) <= kMaxFoldedElements &&
      IsFoldableDType(dtype)) {
    t.contents = std::move(contents);
  }
  t.shape = std::move(shape);
  return t;
}

std::optional<std::vector<int64_t>> IntsFromInputOrAttribute(const OpContext& ctx,
                                                             size_t input_index,
                                                             const std::string& attribute,
                                                             std::vector<int64_t> fallback) {
  if (ctx.has_input(input_index)) return ConstantInts(ctx.inputs[input_index]);
  if (ctx.attrs().Has(attribute)) return ctx.attrs().GetInts(attribute);
  return fallback;
}

void RegisterShapeOps(OpRegistry& registry) {
  RegisterShapeQueryOps(registry);
  RegisterReshapeOps(registry);
  RegisterIndexingOps(registry);
  RegisterLogicOps(registry);
}

}  // namespace memplan
