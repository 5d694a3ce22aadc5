// Comparisons and selection: Equal, Less, Greater, LessOrEqual, GreaterOrEqual, Not, Where.
// PyTorch writes them into shape sub-graphs (expand(-1, ...) becomes
// Where(Equal(shape, -1), ones, shape)), so they fold over symbolic contents.

#include <utility>

#include "graph/ops/common_rules.h"
#include "graph/ops/shape_helpers.h"
#include "graph/ops/shape_ops_folding.h"
#include "graph/ops/shape_ops_internal.h"

namespace memplan {
namespace {

using Compare = std::optional<bool> (*)(const Dim&, const Dim&);

std::optional<bool> Equal(const Dim& a, const Dim& b) { return DimsEqual(a, b); }
std::optional<bool> Less(const Dim& a, const Dim& b) { return DimLess(a, b); }
std::optional<bool> Greater(const Dim& a, const Dim& b) { return DimLess(b, a); }
std::optional<bool> LessOrEqual(const Dim& a, const Dim& b) {
  auto greater = DimLess(b, a);
  if (!greater) return std::nullopt;
  return !*greater;
}
// Logical ops on constant 0/1 contents (masks built from shapes).
std::optional<bool> Truth(const Dim& d) {
  auto v = d.constant_value();
  if (!v) return std::nullopt;
  return *v != 0;
}
std::optional<bool> And(const Dim& a, const Dim& b) {
  auto x = Truth(a), y = Truth(b);
  if (x && y) return *x && *y;
  if ((x && !*x) || (y && !*y)) return false;
  return std::nullopt;
}
std::optional<bool> Or(const Dim& a, const Dim& b) {
  auto x = Truth(a), y = Truth(b);
  if (x && y) return *x || *y;
  if ((x && *x) || (y && *y)) return true;
  return std::nullopt;
}
std::optional<bool> Xor(const Dim& a, const Dim& b) {
  auto x = Truth(a), y = Truth(b);
  if (!x || !y) return std::nullopt;
  return *x != *y;
}
std::optional<bool> GreaterOrEqual(const Dim& a, const Dim& b) {
  auto less = DimLess(a, b);
  if (!less) return std::nullopt;
  return !*less;
}

// Broadcast shape of all present inputs, naming the node on a mismatch.
Expected<Shape> BroadcastInputs(const OpContext& ctx) {
  std::optional<Shape> out;
  for (const auto& in : ctx.inputs) {
    if (!in.present) continue;
    if (!out) {
      out = in.shape;
      continue;
    }
    auto b = BroadcastShapes(*out, in.shape);
    if (!b.ok()) return MakeError(NodeError(ctx.node, b.error().message));
    out = *b;
  }
  return out.value_or(Shape::Unknown());
}

ShapeRule ComparisonRule(Compare compare) {
  return [compare](const OpContext& ctx) -> Expected<std::vector<TensorInfo>> {
    MEMPLAN_TRY(Shape out, BroadcastInputs(ctx));
    std::optional<std::vector<Dim>> contents;
    auto dims = ConstantDims(out);
    if (dims && ctx.inputs.size() == 2) {
      auto a = BroadcastContents(ctx.inputs[0], *dims);
      auto b = BroadcastContents(ctx.inputs[1], *dims);
      if (a && b) {
        contents.emplace();
        for (size_t i = 0; i < a->size() && contents; ++i) {
          auto r = compare((*a)[i], (*b)[i]);
          if (!r) {
            contents.reset();
          } else {
            contents->emplace_back(*r ? 1 : 0);
          }
        }
      }
    }
    return std::vector<TensorInfo>{MakeOutput(DType::kBool, out, std::move(contents))};
  };
}

Expected<std::vector<TensorInfo>> InferNot(const OpContext& ctx) {
  const TensorInfo& in = ctx.inputs.at(0);
  std::optional<std::vector<Dim>> contents;
  if (auto values = ConstantInts(in)) {
    contents.emplace();
    for (int64_t v : *values) contents->emplace_back(v == 0 ? 1 : 0);
  }
  return std::vector<TensorInfo>{MakeOutput(DType::kBool, in.shape, std::move(contents))};
}

// IsNaN, IsInf: a bool per element (integer contents are never NaN or infinite, but the tests are
// written on floats: no contents are folded).
Expected<std::vector<TensorInfo>> InferElementTest(const OpContext& ctx) {
  MEMPLAN_TRY(const TensorInfo* in, RequiredInput(ctx, 0));
  return std::vector<TensorInfo>{MakeOutput(DType::kBool, in->shape, std::nullopt)};
}

Expected<std::vector<TensorInfo>> InferWhere(const OpContext& ctx) {
  MEMPLAN_TRY(Shape out, BroadcastInputs(ctx));
  DType dtype = ctx.inputs.size() > 1 ? ctx.inputs[1].dtype : DType::kUndefined;
  std::optional<std::vector<Dim>> contents;
  auto dims = ConstantDims(out);
  if (dims && ctx.inputs.size() == 3) {
    auto cond = BroadcastContents(ctx.inputs[0], *dims);
    auto x = BroadcastContents(ctx.inputs[1], *dims);
    auto y = BroadcastContents(ctx.inputs[2], *dims);
    if (cond && x && y) {
      contents.emplace();
      for (size_t i = 0; i < cond->size() && contents; ++i) {
        auto c = (*cond)[i].constant_value();
        if (!c) {
          contents.reset();
        } else {
          contents->push_back(*c != 0 ? (*x)[i] : (*y)[i]);
        }
      }
    }
  }
  return std::vector<TensorInfo>{MakeOutput(dtype, out, std::move(contents))};
}

void AddComparison(OpRegistry& registry, const char* op, Compare compare) {
  OpSchema schema = ShapeOpSchema(op);
  schema.infer_shapes = ComparisonRule(compare);
  schema.saved_source = "derivatives.yaml: comparisons are not differentiable";
  schema.pointwise = true;
  registry.Register(std::move(schema));
}

}  // namespace

void RegisterLogicOps(OpRegistry& registry) {
  AddComparison(registry, "Equal", Equal);
  AddComparison(registry, "Less", Less);
  AddComparison(registry, "Greater", Greater);
  AddComparison(registry, "LessOrEqual", LessOrEqual);
  AddComparison(registry, "GreaterOrEqual", GreaterOrEqual);

  // And, Or, Xor: boolean masks (Longformer / local-window attention masks, padding masks).
  for (auto [op, compare] :
       {std::pair<const char*, Compare>{"And", And}, {"Or", Or}, {"Xor", Xor}}) {
    OpSchema schema = ShapeOpSchema(op);
    schema.infer_shapes = ComparisonRule(compare);
    schema.saved_source =
        "derivatives.yaml: logical_and / logical_or / logical_xor are not "
        "differentiable";
    schema.pointwise = true;
    registry.Register(std::move(schema));
  }
  // IsNaN, IsInf: boolean tests of each element (a NaN guard before a loss).
  for (const char* op : {"IsNaN", "IsInf"}) {
    OpSchema schema = ShapeOpSchema(op);
    schema.infer_shapes = InferElementTest;
    schema.saved_source = "derivatives.yaml: isnan / isinf are not differentiable";
    schema.pointwise = true;
    registry.Register(std::move(schema));
  }

  OpSchema logical_not = ShapeOpSchema("Not");
  logical_not.infer_shapes = InferNot;
  logical_not.saved_source = "derivatives.yaml: logical_not is not differentiable";
  logical_not.pointwise = true;
  registry.Register(std::move(logical_not));

  OpSchema where = ShapeOpSchema("Where");
  where.infer_shapes = InferWhere;
  where.pointwise = true;
  where.saved_source =
      "derivatives.yaml: where.self: where(condition, grad, 0) / where(condition, 0, grad) saves "
      "condition";
  where.saved_for_backward = [](const OpContext&) {
    return std::vector<SavedTensor>{SavedTensor{SavedTensor::Source::kInput, /*index=*/0}};
  };
  registry.Register(std::move(where));
}

}  // namespace memplan
