// MatMul (numpy semantics: batched, broadcast, 1-D operands), Gemm (transA/transB, bias) and
// Einsum. FLOPs: 2*M*N*K per matrix product (multiply-add = 2), times the broadcast batch;
// Gemm adds M*N for the bias; Einsum 2 * (points of the iteration space) for two or more
// operands. Backward runs one product per operand gradient: backward_flops_factor 2.

#include "graph/ops/common_rules.h"
#include "graph/ops/einsum_rules.h"
#include "graph/ops/op_families.h"
#include "graph/ops/op_registry.h"
#include "graph/ops/shape_helpers.h"
#include "graph/ops/view_layout.h"

namespace memplan {
namespace {

// The matrix view of MatMul's operands: 1-D a is [1, K] (row vector), 1-D b is [K, 1].
struct MatMulDims {
  Shape batch;
  Dim m, k, n;
  bool a_vector = false;
  bool b_vector = false;
};

Expected<MatMulDims> ReadMatMulDims(const Node& node, const Shape& a, const Shape& b) {
  if (a.rank() == 0 || b.rank() == 0) {
    return MakeError(NodeError(node, "MatMul operands must have rank >= 1"));
  }
  MatMulDims d;
  d.a_vector = a.rank() == 1;
  d.b_vector = b.rank() == 1;
  d.m = d.a_vector ? Dim(1) : a.dims[a.rank() - 2];
  Dim ka = a.dims[a.rank() - 1];
  Dim kb = d.b_vector ? b.dims[0] : b.dims[b.rank() - 2];
  d.n = d.b_vector ? Dim(1) : b.dims[b.rank() - 1];
  auto ca = ka.constant_value();
  auto cb = kb.constant_value();
  if (ca && cb && *ca != *cb) {
    return MakeError(NodeError(
        node, "inner dimensions differ: " + std::to_string(*ca) + " vs " + std::to_string(*cb)));
  }
  d.k = ca ? ka : kb;  // prefer the constant
  Shape batch_a, batch_b;
  if (a.rank() > 2) batch_a.dims.assign(a.dims.begin(), a.dims.end() - 2);
  if (b.rank() > 2) batch_b.dims.assign(b.dims.begin(), b.dims.end() - 2);
  auto batch = BroadcastShapes(batch_a, batch_b);
  if (!batch) return MakeError(NodeError(node, "batch dims: " + batch.error().message));
  d.batch = std::move(*batch);
  return d;
}

// The output shape of a two-operand contraction from its operands' known shapes.
using ContractionGeometry = Expected<Shape> (*)(const OpContext& ctx, const Shape& a,
                                                const Shape& b);

// MatMul and Gemm infer alike around their geometry: both operands are required, the output
// takes A's dtype, and its shape stays unknown while either operand's is.
Expected<std::vector<TensorInfo>> ContractionShape(const OpContext& ctx,
                                                   ContractionGeometry geometry) {
  MEMPLAN_TRY(const TensorInfo* a, RequiredInput(ctx, 0));
  MEMPLAN_TRY(const TensorInfo* b, RequiredInput(ctx, 1));
  auto outs = EmptyOutputs(ctx);
  if (outs.empty()) return outs;
  outs[0].dtype = a->dtype;
  if (!a->shape.known || !b->shape.known) return outs;
  MEMPLAN_TRY(outs[0].shape, geometry(ctx, a->shape, b->shape));
  return outs;
}

Expected<Shape> MatMulGeometry(const OpContext& ctx, const Shape& a, const Shape& b) {
  MEMPLAN_TRY(MatMulDims d, ReadMatMulDims(ctx.node, a, b));
  Shape y = d.batch;
  if (!d.a_vector) y.dims.push_back(d.m);
  if (!d.b_vector) y.dims.push_back(d.n);
  return y;
}

Expected<std::vector<TensorInfo>> MatMulShape(const OpContext& ctx) {
  return ContractionShape(ctx, MatMulGeometry);
}

OpCost MatMulCost(const OpContext& ctx) {
  if (ctx.inputs.size() < 2 || !ctx.inputs[0].shape.known || !ctx.inputs[1].shape.known)
    return IoCost(ctx, 0);
  auto d = ReadMatMulDims(ctx.node, ctx.inputs[0].shape, ctx.inputs[1].shape);
  if (!d) return IoCost(ctx, 0);
  return IoCost(ctx, Dim(2) * d->batch.NumElements() * d->m * d->n * d->k);
}

// mm/bmm/addmm: mat1's gradient is grad @ mat2^T and mat2's is mat1^T @ grad, so each operand
// is saved only when the other one requires grad. Einsum lowers to the same products, so operand
// i is kept when any other operand requires grad.
std::vector<SavedTensor> SaveOperandsForOthers(const OpContext& ctx, size_t operands) {
  std::vector<SavedTensor> saved;
  for (size_t i = 0; i < operands && i < ctx.inputs.size(); ++i) {
    bool other_needs = false;
    for (size_t j = 0; j < operands; ++j)
      if (j != i && InputRequiresGrad(ctx, j)) other_needs = true;
    if (other_needs && ctx.has_input(i)) saved.push_back(SaveInput(static_cast<int>(i)));
  }
  return saved;
}

const char* const kMatMulAmp = "lower_precision_fp list (mm, bmm, matmul, addmm, linear, einsum)";

// MatMul, Gemm and Einsum share every fact but their shapes, cost and what exactly they save:
// each of the matrix operands is saved when another needs a gradient, and all run in fp16 under
// autocast.
OpSchema ContractionSchema(const char* op_type, ShapeRule infer_shapes, CostRule cost,
                           const char* saved_rule, SavedRule saved) {
  OpSchema s;
  s.op_type = op_type;
  s.infer_shapes = std::move(infer_shapes);
  s.cost = std::move(cost);
  s.SetSaved(DerivativesSource(saved_rule), std::move(saved));
  s.backward_flops_factor = kContractionBackwardFactor;
  s.SetAmp(AmpCategory::kFp16Safe, AutocastSource(kMatMulAmp));
  return s;
}

// torch's matmul (LinearAlgebra.cpp, _matmul_impl) runs a 3-D+ operand as mm/bmm over a reshape
// of it: by a matrix, `tensor1.reshape(-1, k)` (the batch folded into rows); batched, each operand
// expanded to the batch and reshaped to [batch, rows, cols]. A reshape that cannot view its
// operand copies it (nn.MultiheadAttention's batch_first `query.transpose(1, 0)` into its
// in-projection, a transposed q or k of HF attention, an expanded query token), and mm/bmm save
// the copy, not the operand. Operands that broadcast a batch dim keep the operand (not modelled).
std::optional<Shape> MatMulOperandView(const OpContext& ctx, size_t operand) {
  const Shape& a = ctx.inputs[0].shape;
  const Shape& b = ctx.inputs[1].shape;
  const Shape& self = ctx.inputs[operand].shape;
  if (self.rank() < 3) return std::nullopt;
  if (operand == 0 && b.rank() <= 2) {
    Shape rows;
    rows.dims.push_back(Dim(1));
    for (size_t d = 0; d + 1 < self.rank(); ++d) rows.dims[0] = rows.dims[0] * self.dims[d];
    rows.dims.push_back(self.dims.back());
    return rows;
  }
  if (a.rank() < 3 || b.rank() < 3 || a.rank() != b.rank()) return std::nullopt;
  for (size_t d = 0; d + 2 < a.rank(); ++d)
    if (!(a.dims[d] == b.dims[d])) return std::nullopt;  // a broadcast batch
  Shape batched;
  batched.dims.push_back(Dim(1));
  for (size_t d = 0; d + 2 < self.rank(); ++d) batched.dims[0] = batched.dims[0] * self.dims[d];
  batched.dims.push_back(self.dims[self.rank() - 2]);
  batched.dims.push_back(self.dims.back());
  return batched;
}

std::vector<SavedTensor> MatMulSaved(const OpContext& ctx) {
  std::vector<SavedTensor> saved = SaveOperandsForOthers(ctx, 2);
  if (ctx.inputs.size() < 2 || !ctx.inputs[0].shape.known || !ctx.inputs[1].shape.known)
    return saved;
  for (SavedTensor& s : saved) {
    if (s.source != SavedTensor::Source::kInput) continue;
    const auto operand = static_cast<size_t>(s.index);
    const TensorInfo& in = ctx.inputs[operand];
    if (in.strides.empty()) continue;  // dense: every reshape views it
    const std::optional<Shape> view = MatMulOperandView(ctx, operand);
    if (view && !ReshapedStrides(in.shape, in.strides, *view)) s = SaveContiguousCopy(ctx, s.index);
  }
  return saved;
}

OpSchema MatMulSchema() {
  OpSchema s = ContractionSchema(
      "MatMul", MatMulShape, MatMulCost,
      "mm: self: mm_mat1_backward(grad, mat2, ...), mat2: mm_mat2_backward(grad, self, ...); bmm "
      "likewise (matmul is composite over mm/bmm on reshapes of its operands; one that reshape "
      "cannot view is saved as its copy)",
      MatMulSaved);
  s.is_linear_layer = true;  // Linear without bias: x @ W
  s.weight_inputs = {1};
  return s;
}

// Gemm: Y = alpha * A' B' + beta * C with A' = transA ? A^T : A ([M, K]), B' likewise ([K, N]).
Expected<Shape> GemmGeometry(const OpContext& ctx, const Shape& a, const Shape& b) {
  if (a.rank() != 2 || b.rank() != 2) {
    return MakeError(NodeError(ctx.node, "Gemm operands must be 2-D, got ranks " +
                                             std::to_string(a.rank()) + " and " +
                                             std::to_string(b.rank())));
  }
  bool ta = ctx.attrs().GetInt("transA", 0) != 0;
  bool tb = ctx.attrs().GetInt("transB", 0) != 0;
  const Dim& m = a.dims[ta ? 1 : 0];
  const Dim& ka = a.dims[ta ? 0 : 1];
  const Dim& kb = b.dims[tb ? 1 : 0];
  const Dim& n = b.dims[tb ? 0 : 1];
  auto ca = ka.constant_value();
  auto cb = kb.constant_value();
  if (ca && cb && *ca != *cb) {
    return MakeError(NodeError(ctx.node, "inner dimensions differ: " + std::to_string(*ca) +
                                             " vs " + std::to_string(*cb)));
  }
  return Shape{{m, n}};
}

Expected<std::vector<TensorInfo>> GemmShape(const OpContext& ctx) {
  return ContractionShape(ctx, GemmGeometry);
}

OpCost GemmCost(const OpContext& ctx) {
  if (ctx.inputs.size() < 2 || !ctx.inputs[0].shape.known || ctx.inputs[0].shape.rank() != 2 ||
      ctx.outputs.empty() || !ctx.outputs[0].shape.known) {
    return IoCost(ctx, 0);
  }
  bool ta = ctx.attrs().GetInt("transA", 0) != 0;
  const Dim& k = ctx.inputs[0].shape.dims[ta ? 0 : 1];
  Dim mn = ctx.outputs[0].shape.NumElements();
  Dim flops = Dim(2) * mn * k;
  if (ctx.has_input(2)) flops += mn;  // + beta * C
  return IoCost(ctx, flops);
}

OpSchema GemmSchema() {
  OpSchema s = ContractionSchema(
      "Gemm", GemmShape, GemmCost,
      "addmm: mat1: mm_mat1_backward(grad, mat2, ...), mat2: mm_mat2_backward(grad, mat1, ...); "
      "self (bias) needs nothing",
      [](const OpContext& ctx) { return SaveOperandsForOthers(ctx, 2); });
  s.is_linear_layer = true;  // Linear: x @ W^T + b
  s.weight_inputs = {1, 2};
  return s;
}

Expected<EinsumShapes> EinsumShapesOf(const OpContext& ctx) {
  std::string equation = ctx.attrs().GetString("equation", "");
  if (equation.empty()) return MakeError(NodeError(ctx.node, "missing 'equation' attribute"));
  auto parsed = ParseEinsumEquation(equation, ctx.inputs.size());
  if (!parsed) return MakeError(NodeError(ctx.node, parsed.error().message));
  std::vector<Shape> shapes;
  for (const auto& in : ctx.inputs) {
    if (!in.present || !in.shape.known)
      return MakeError(NodeError(ctx.node, "unknown input shape"));
    shapes.push_back(in.shape);
  }
  auto result = EinsumOutputShape(*parsed, shapes);
  if (!result) return MakeError(NodeError(ctx.node, result.error().message));
  return result;
}

// torch's einsum runs two operands as one bmm over 3-D reshapes of their permutations
// (EinsumBmmOperands: sumproduct_pair in ATen Linear.cpp). Where that reshape cannot view an
// operand it copies it, and bmm saves the copy, not the operand. MaxViT's attention runs
// einsum("BGHID,BGHJD->BGHIJ", q, k * scale) and einsum(..., p, v) with q, k, v permuted views of
// chunks of one qkv projection: torch saves [B*G*H, P, D] copies and frees the projection, where
// saving the views would keep all of qkv alive (+1 activation per attention layer). torch copies
// k * scale too (its output keeps k's permuted layout); memplan writes elementwise outputs dense,
// so it keeps k * scale itself: the same bytes. Other einsums keep their operands as they are.
std::vector<SavedTensor> EinsumSaved(const OpContext& ctx) {
  std::vector<SavedTensor> saved = SaveOperandsForOthers(ctx, ctx.inputs.size());
  if (ctx.inputs.size() != 2) return saved;
  for (const TensorInfo& in : ctx.inputs)
    if (!in.present || !in.shape.known) return saved;
  auto parsed = ParseEinsumEquation(ctx.attrs().GetString("equation", ""), 2);
  if (!parsed) return saved;
  const auto bmm = EinsumBmmOperands(*parsed, {ctx.inputs[0].shape, ctx.inputs[1].shape});
  if (!bmm) return saved;
  for (SavedTensor& s : saved) {
    if (s.source != SavedTensor::Source::kInput) continue;
    const auto operand = static_cast<size_t>(s.index);
    const TensorInfo& in = ctx.inputs[operand];
    const EinsumBmmOperand& layout = (*bmm)[operand];
    const Strides strides = LayoutOf(in.shape, in.strides);
    Shape permuted;
    Strides permuted_strides;
    for (size_t axis : layout.axes) {
      permuted.dims.push_back(in.shape.dims[axis]);
      permuted_strides.push_back(strides[axis]);
    }
    Shape folded;
    size_t next = 0;
    for (size_t count : layout.groups) {
      Dim size(1);
      for (size_t k = 0; k < count; ++k) size = size * permuted.dims[next++];
      folded.dims.push_back(size);
    }
    if (!ReshapedStrides(permuted, permuted_strides, folded)) s = SaveContiguousCopy(ctx, s.index);
  }
  return saved;
}

Expected<std::vector<TensorInfo>> EinsumShape(const OpContext& ctx) {
  auto outs = EmptyOutputs(ctx);
  if (outs.empty() || ctx.inputs.empty()) return outs;
  outs[0].dtype = ctx.inputs[0].dtype;
  for (const auto& in : ctx.inputs)
    if (!in.present || !in.shape.known) return outs;  // unknown until inputs are
  MEMPLAN_TRY(EinsumShapes shapes, EinsumShapesOf(ctx));
  outs[0].shape = std::move(shapes.output);
  return outs;
}

OpCost EinsumCost(const OpContext& ctx) {
  auto shapes = EinsumShapesOf(ctx);
  if (!shapes) return IoCost(ctx, 0);
  Dim factor = ctx.inputs.size() >= 2 ? 2 : 1;
  return IoCost(ctx, factor * shapes->iteration_points);
}

OpSchema EinsumSchema() {
  return ContractionSchema(
      "Einsum", EinsumShape, EinsumCost,
      "einsum is composite (permute/reshape + bmm, sumproduct_pair); bmm saves each operand when "
      "the other requires grad, as the copy its reshape makes where the permuted operand cannot "
      "be viewed as [batch, rows, cols]",
      EinsumSaved);
}

}  // namespace

void RegisterMatMulOps(OpRegistry& registry) {
  registry.Register(MatMulSchema());
  registry.Register(GemmSchema());
  registry.Register(EinsumSchema());
}

}  // namespace memplan
