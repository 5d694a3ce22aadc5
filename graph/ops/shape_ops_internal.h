#pragma once
// The shape-op family is split by theme; RegisterShapeOps (shape_ops.cc) calls each part.

#include <optional>
#include <string>
#include <vector>

#include "graph/ops/op_registry.h"

namespace memplan {

void RegisterShapeQueryOps(OpRegistry& registry);  // Shape, Size, Constant, Range, Cast, ...
void RegisterReshapeOps(OpRegistry& registry);     // Reshape, Flatten, (Un)Squeeze, Expand, ...
void RegisterIndexingOps(OpRegistry& registry);    // Concat, Split, Slice, Gather, ...
void RegisterLogicOps(OpRegistry& registry);       // Where, Equal, Less, Greater, Not

// Citations shared by the family's entries.
inline constexpr const char* kNothingSaved =
    "derivatives.yaml: backward needs only sizes/options, no tensor is saved";
inline constexpr const char* kFollowsInputsAmp =
    "torch.autocast: not in any cast list, runs in its inputs' dtype";

// A schema with the family's common defaults: follows inputs under AMP, nothing saved.
OpSchema ShapeOpSchema(std::string op_type);
// Zero FLOPs and zero bytes: metadata-only ops (Shape, Size, Constant) and views.
OpCost NoCost(const OpContext& ctx);
// Zero FLOPs, bytes read + written: pure data movement (Concat, Slice, Gather, Cast...).
OpCost MovementCost(const OpContext& ctx);

// One output with dtype, shape and (optional) contents; contents are kept only when small.
TensorInfo MakeOutput(DType dtype, Shape shape, std::optional<std::vector<Dim>> contents = {});

// An int list given either as input `input_index` (its constant contents) or as attribute
// `attribute` (older opsets). nullopt when the input is present without constant contents;
// `fallback` when neither is given.
std::optional<std::vector<int64_t>> IntsFromInputOrAttribute(const OpContext& ctx,
                                                             size_t input_index,
                                                             const std::string& attribute,
                                                             std::vector<int64_t> fallback);

}  // namespace memplan
