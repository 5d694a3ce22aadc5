#include "graph/ops/common_rules.h"

#include "graph/ops/shape_helpers.h"

namespace memplan {

std::string DerivativesSource(std::string_view what) {
  return std::string(kDerivativesYaml) + ": " + std::string(what);
}

std::string AutocastSource(std::string_view what) {
  return std::string(kAutocastLists) + ": " + std::string(what);
}

OpSchema WindowedSchema(const char* op_type, ShapeRule infer_shapes, CostRule cost,
                        const char* saved_rule, SavedRule saved, GradientRule gradient_inputs) {
  OpSchema s;
  s.op_type = op_type;
  s.infer_shapes = std::move(infer_shapes);
  s.cost = std::move(cost);
  s.SetSaved(DerivativesSource(saved_rule), std::move(saved));
  s.gradient_inputs = std::move(gradient_inputs);
  s.backward_flops_factor = kElementwiseBackwardFactor;
  s.SetAmp(AmpCategory::kFollowInputs, AutocastSource(kNotAutocastListedForCuda));
  return s;
}

SavedTensor SaveInput(int index) { return {SavedTensor::Source::kInput, index, "", {}, {}}; }

SavedTensor SaveOutput(int index) { return {SavedTensor::Source::kOutput, index, "", {}, {}}; }

SavedTensor SaveExtra(std::string name, DType dtype, Shape shape) {
  return {SavedTensor::Source::kExtra, 0, std::move(name), dtype, std::move(shape)};
}

SavedRule AlwaysSave(std::vector<SavedTensor> saved) {
  return [saved = std::move(saved)](const OpContext&) { return saved; };
}

SavedRule SaveNothing() { return AlwaysSave({}); }

std::vector<SavedTensor> SaveInput0AndPresent(const OpContext& ctx,
                                              std::initializer_list<int> optional) {
  std::vector<SavedTensor> saved{SaveInput(0)};
  for (int input : optional)
    if (ctx.has_input(static_cast<size_t>(input))) saved.push_back(SaveInput(input));
  return saved;
}

bool RequiresGrad(const TensorInfo& tensor) {
  return tensor.present && IsFloating(tensor.dtype) &&
         (tensor.kind == ValueKind::kParameter || tensor.kind == ValueKind::kIntermediate);
}

bool InputRequiresGrad(const OpContext& ctx, size_t input) {
  return ctx.has_input(input) && RequiresGrad(ctx.inputs[input]);
}

SavedRule WhenDifferentiable(SavedRule rule) {
  return [rule = std::move(rule)](const OpContext& ctx) {
    for (size_t i = 0; i < ctx.inputs.size(); ++i)
      if (InputRequiresGrad(ctx, i)) return rule(ctx);
    return std::vector<SavedTensor>{};
  };
}

GradientRule GradientsAtSlots(std::vector<size_t> slots) {
  return [slots = std::move(slots)](const OpContext& ctx) {
    std::vector<bool> grads(ctx.inputs.size(), false);
    for (size_t i : slots)
      if (i < grads.size()) grads[i] = InputRequiresGrad(ctx, i);
    return grads;
  };
}

GradientRule GradientOnlyForFloatingInput0() {
  return [](const OpContext& ctx) {
    std::vector<bool> grads(ctx.inputs.size(), false);
    if (!grads.empty()) grads[0] = ctx.has_input(0) && IsFloating(ctx.inputs[0].dtype);
    return grads;
  };
}

GradientRule GradientsForFloatingInputsThrough(size_t last_slot) {
  return [last_slot](const OpContext& ctx) {
    std::vector<bool> grads(ctx.inputs.size(), false);
    for (size_t i = 0; i < grads.size() && i <= last_slot; ++i)
      grads[i] = ctx.has_input(i) && IsFloating(ctx.inputs[i].dtype) &&
                 ctx.inputs[i].kind != ValueKind::kConstant;
    return grads;
  };
}

DType StatisticsDType(DType input) {
  return input == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
}

OpCost IoCost(const OpContext& ctx, Dim flops) {
  OpCost cost;
  cost.flops = std::move(flops);
  for (const auto& in : ctx.inputs)
    if (in.present && in.shape.known) cost.bytes_read += in.Bytes();
  for (const auto& out : ctx.outputs)
    if (out.present && out.shape.known) cost.bytes_written += out.Bytes();
  return cost;
}

OpCost PerOutputElementCost(const OpContext& ctx, int64_t flops_per_element) {
  Dim flops = 0;
  if (!ctx.outputs.empty() && ctx.outputs[0].present && ctx.outputs[0].shape.known)
    flops = ctx.outputs[0].shape.NumElements() * Dim(flops_per_element);
  return IoCost(ctx, flops);
}

OpCost PerInputElementCost(const OpContext& ctx, int64_t flops_per_element, size_t input) {
  Dim flops = 0;
  if (ctx.has_input(input) && ctx.inputs[input].shape.known)
    flops = ctx.inputs[input].shape.NumElements() * Dim(flops_per_element);
  return IoCost(ctx, flops);
}

CostRule PerOutputElementCostRule(int64_t flops_per_element) {
  return [flops_per_element](const OpContext& ctx) {
    return PerOutputElementCost(ctx, flops_per_element);
  };
}

CostRule PerInputElementCostRule(int64_t flops_per_element) {
  return [flops_per_element](const OpContext& ctx) {
    return PerInputElementCost(ctx, flops_per_element);
  };
}

std::optional<std::vector<int64_t>> ConstantInts(const TensorInfo& tensor) {
  if (!tensor.present || !tensor.contents) return std::nullopt;
  std::vector<int64_t> values;
  values.reserve(tensor.contents->size());
  for (const Dim& d : *tensor.contents) {
    auto c = d.constant_value();
    if (!c) return std::nullopt;
    values.push_back(*c);
  }
  return values;
}

std::vector<TensorInfo> EmptyOutputs(const OpContext& ctx) {
  std::vector<TensorInfo> outs(ctx.node.outputs.size());
  for (size_t i = 0; i < outs.size(); ++i) outs[i].present = ctx.node.outputs[i].valid();
  return outs;
}

Expected<const TensorInfo*> RequiredInput(const OpContext& ctx, size_t index) {
  if (!ctx.has_input(index)) {
    return MakeError(
        NodeError(ctx.node, "required input " + std::to_string(index) + " is missing"));
  }
  return &ctx.inputs[index];
}

Expected<std::vector<TensorInfo>> OutputInInput0DType(const OpContext& ctx) {
  MEMPLAN_TRY(const TensorInfo* x, RequiredInput(ctx, 0));
  auto outs = EmptyOutputs(ctx);
  if (!outs.empty()) outs[0].dtype = x->dtype;
  return outs;
}

Expected<std::vector<TensorInfo>> OutputLikeInput0(const OpContext& ctx) {
  MEMPLAN_TRY(auto outs, OutputInInput0DType(ctx));
  if (!outs.empty()) outs[0].shape = ctx.inputs[0].shape;
  return outs;
}

Expected<std::optional<QkvInputs>> ReadQkvInputs(const OpContext& ctx, const std::string& names) {
  MEMPLAN_TRY(const TensorInfo* q, RequiredInput(ctx, 0));
  MEMPLAN_TRY(const TensorInfo* k, RequiredInput(ctx, 1));
  MEMPLAN_TRY(const TensorInfo* v, RequiredInput(ctx, 2));
  if (!q->shape.known || !k->shape.known || !v->shape.known) return std::optional<QkvInputs>{};
  const size_t rank = q->shape.rank();
  if ((rank != 3 && rank != 4) || k->shape.rank() != rank || v->shape.rank() != rank)
    return MakeError(NodeError(ctx.node, names + " must all be 3D or all be 4D"));
  return std::optional<QkvInputs>{QkvInputs{q, k, v, rank}};
}

std::optional<Dim> FreshDim(const OpContext& ctx, const char* prefix) {
  if (ctx.symbols == nullptr) return std::nullopt;
  return Dim::Symbol(ctx.symbols->Fresh(prefix));
}

}  // namespace memplan
