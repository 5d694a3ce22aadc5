// memplan:FusedLinearCrossEntropy (graph/ops/fused_loss_op.h): the LM head and the cross entropy
// as Liger Kernel's LigerFusedLinearCrossEntropyFunction runs them
// (liger_kernel/ops/fused_linear_cross_entropy.py, fused_linear_cross_entropy_forward/_backward).
//
// Saved for backward: what forward computed for it, in the dtypes of the tensors they are
// zeros_like of: grad_input [BT, H] (input's dtype), grad_weight (the weight's shape and dtype)
// and grad_bias [V] with a bias. Liger allocates the weight and bias gradients only when the
// input requires grad ("if input_requires_grad: grad_weight = torch.zeros_like(weight)"), so a
// head over a tensor that needs no gradient trains nothing; the gradient rule says the same.
// Backward returns exactly these tensors (OpSchema::gradients_from_saved): it allocates none.
//
// Forward workspace (freed when forward returns): the logits tile [chunk, V] in the input's dtype
// (the cross-entropy kernel writes the logits' gradient into it in place), loss_1d fp32 [BT],
// target_mask bool [BT], and the [V, H] product torch.mm(grad_logits_chunk.t(), input_chunk) that
// `grad_weight +=` adds, when the logits and grad_weight share a dtype (fp32, or pure half): with
// half logits and an fp32 weight Liger accumulates with addmm(out_dtype=float32, out=grad_weight)
// (torch >= 2.8, sm >= 8) and makes none. A half product is also made fp32 by `.float()` before
// the add. With a bias, grad_logits_chunk.sum(0) [V].
//
// The chunk: Liger's rows are min(BT, next_power_of_2(cdiv(BT, cdiv(V, H)))) (ChunkRows), which
// no polynomial in the batch expresses, and byte sizes here are polynomials evaluated per
// micro-batch. With inc = cdiv(V, H) and c rows per sample (seq for [batch, seq, H]), the tile is
// planned with cdiv(c, inc) * batch rows (seq 1024, H 4096, V 32000: inc 8, 128 rows per
// sample): Liger's row count whenever c is a multiple of inc and BT / inc is a power of two;
// otherwise Liger's power of two can be up to twice the planned rows (the rounding is not
// planned). c comes from the rewrite (kTileRowsPerSample, computed with the --dim bindings);
// without it, each term k * (symbols) of the symbolic BT gets cdiv(k, inc) * (symbols) rows,
// which is the whole BT when a symbol such as seq is unbound. A constant BT is planned exactly.
// The report gives Liger's exact rows at the chosen micro-batch
// (analyzer/derivation/fused_loss_plan.h).
//
// FLOPs, all in forward: 2*BT*H*V for the logits, 2*BT*H*V for grad_input, 2*BT*H*V for
// grad_weight, and the cross entropy's kSoftmaxFlopsPerElement per logit: 6*BT*H*V + 5*BT*V.
// Backward scales the saved gradients only when the upstream gradient is not 1.0 (it is 1.0 for
// the loss memplan plans), an element-wise pass it does not count: backward_flops_factor 0.

#include <algorithm>
#include <bit>
#include <cstdint>
#include <optional>

#include "graph/ops/common_rules.h"
#include "graph/ops/fused_loss_op.h"
#include "graph/ops/op_families.h"
#include "graph/ops/op_registry.h"
#include "graph/ops/shape_helpers.h"

namespace memplan {

int64_t fused_loss::ChunkRows(int64_t rows, int64_t hidden, int64_t vocab) {
  MEMPLAN_CHECK(rows >= 1 && hidden >= 1 && vocab >= 1);
  const int64_t inc_factor = (vocab + hidden - 1) / hidden;
  const auto per_chunk = static_cast<uint64_t>((rows + inc_factor - 1) / inc_factor);
  const auto chunk_size = static_cast<int64_t>(std::bit_ceil(per_chunk));
  return std::min(rows, chunk_size);
}

namespace {

// The input's rows BT (every dim but the last) and H, V from the weight's layout.
struct HeadDims {
  Dim rows;
  Dim hidden;
  Dim vocab;
};

std::optional<HeadDims> ReadHeadDims(const OpContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return std::nullopt;
  const Shape& x = ctx.inputs[0].shape;
  const Shape& w = ctx.inputs[1].shape;
  if (!x.known || !w.known || x.rank() < 2 || w.rank() != 2) return std::nullopt;
  HeadDims d;
  d.rows = 1;
  for (size_t i = 0; i + 1 < x.rank(); ++i) d.rows *= x.dims[i];
  const bool transposed = ctx.attrs().GetInt(fused_loss::kTransposedWeight, 0) != 0;
  d.hidden = x.dims.back();
  d.vocab = transposed ? w.dims[0] : w.dims[1];
  return d;
}

Expected<std::vector<TensorInfo>> FusedLossShape(const OpContext& ctx) {
  MEMPLAN_TRY(const TensorInfo* x, RequiredInput(ctx, 0));
  MEMPLAN_TRY(const TensorInfo* w, RequiredInput(ctx, 1));
  MEMPLAN_TRY(const TensorInfo* target, RequiredInput(ctx, 2));
  if (x->shape.known && x->shape.rank() < 2)
    return MakeError(NodeError(ctx.node, "input must be [..., hidden]"));
  if (w->shape.known && w->shape.rank() != 2)
    return MakeError(NodeError(ctx.node, "weight must be 2-D"));
  if (x->shape.known && target->shape.known && target->shape.rank() + 1 != x->shape.rank())
    return MakeError(NodeError(ctx.node, "target must have the input's shape without hidden"));
  return SingleOutput(DType::kFloat32, Shape{});  // the mean loss, fp32 (loss_1d is fp32)
}

// The tile's rows (see the file comment); exact for a constant BT.
Dim TileRows(const OpContext& ctx, const Dim& rows, const Dim& hidden, const Dim& vocab) {
  const std::optional<int64_t> h = hidden.constant_value();
  const std::optional<int64_t> v = vocab.constant_value();
  if (!h || !v || *h < 1 || *v < 1) return rows;  // unknown head sizes: the whole logits
  if (const std::optional<int64_t> bt = rows.constant_value(); bt && *bt >= 1)
    return fused_loss::ChunkRows(*bt, *h, *v);
  if (const int64_t per_sample = ctx.attrs().GetInt(fused_loss::kTileRowsPerSample, 0);
      per_sample > 0)
    return Dim(per_sample) * ctx.inputs[0].shape.dims[0];
  const int64_t inc_factor = (*v + *h - 1) / *h;
  Dim tile;
  for (const Dim::Term& t : rows.terms()) {
    Dim term = (t.coefficient + inc_factor - 1) / inc_factor;
    for (SymbolId s : t.symbols) term *= Dim::Symbol(s);
    tile += term;
  }
  return tile;
}

Dim ForwardWorkspace(const OpContext& ctx) {
  const std::optional<HeadDims> d = ReadHeadDims(ctx);
  if (!d) return 0;
  const DType x = ctx.inputs[0].dtype;
  const DType w = ctx.inputs[1].dtype;
  Dim bytes = TensorBytes(TileRows(ctx, d->rows, d->hidden, d->vocab) * d->vocab, x);
  bytes += TensorBytes(d->rows, DType::kFloat32);  // loss_1d
  bytes += TensorBytes(d->rows, DType::kBool);     // target_mask
  if (x == w) {
    bytes += TensorBytes(d->vocab * d->hidden, x);  // torch.mm(grad_logits_chunk.t(), input_chunk)
    if (x != DType::kFloat32) bytes += TensorBytes(d->vocab * d->hidden, DType::kFloat32);
  }
  if (ctx.has_input(3)) bytes += TensorBytes(d->vocab, x);  // grad_logits_chunk.sum(dim=0)
  return bytes;
}

OpCost FusedLossCost(const OpContext& ctx) {
  const std::optional<HeadDims> d = ReadHeadDims(ctx);
  if (!d) return IoCost(ctx, 0);
  const Dim logits = d->rows * d->vocab;
  OpCost cost = IoCost(ctx, Dim(6) * logits * d->hidden + Dim(kSoftmaxFlopsPerElement) * logits);
  // The gradients forward writes.
  cost.bytes_written += ctx.inputs[0].Bytes() + ctx.inputs[1].Bytes();
  if (ctx.has_input(3)) cost.bytes_written += ctx.inputs[3].Bytes();
  return cost;
}

// Liger computes weight and bias gradients only when the input requires grad.
std::vector<bool> FusedLossGradients(const OpContext& ctx) {
  std::vector<bool> grads(ctx.inputs.size(), false);
  const bool input = InputRequiresGrad(ctx, 0);
  if (!grads.empty()) grads[0] = input;
  if (grads.size() > 1) grads[1] = input && InputRequiresGrad(ctx, 1);
  if (grads.size() > 3) grads[3] = input && InputRequiresGrad(ctx, 3);
  return grads;
}

std::vector<SavedTensor> FusedLossSaved(const OpContext& ctx) {
  const std::vector<bool> grads = FusedLossGradients(ctx);
  std::vector<SavedTensor> saved;
  const char* names[] = {fused_loss::kGradInput, fused_loss::kGradWeight, nullptr,
                         fused_loss::kGradBias};
  for (size_t i = 0; i < grads.size() && i < 4; ++i) {
    if (!grads[i] || names[i] == nullptr) continue;
    saved.push_back(SaveExtra(names[i], ctx.inputs[i].dtype, ctx.inputs[i].shape));
  }
  return saved;
}

OpSchema FusedLossSchema() {
  OpSchema s;
  s.op_type = fused_loss::kOpType;
  s.domain = fused_loss::kDomain;
  s.infer_shapes = FusedLossShape;
  s.cost = FusedLossCost;
  s.saved_for_backward = FusedLossSaved;
  s.gradient_inputs = FusedLossGradients;
  s.forward_workspace = ForwardWorkspace;
  s.gradients_from_saved = {
      {0, fused_loss::kGradInput}, {1, fused_loss::kGradWeight}, {3, fused_loss::kGradBias}};
  s.backward_flops_factor = 0.0;
  // amp_custom_fwd: the function runs under the caller's autocast state; its matmuls follow the
  // inputs as memplan plans them (an fp32 head under autocast is planned in fp32: the real logits
  // tile is half, so the tile is over-estimated there, never under).
  s.amp = AmpCategory::kFollowInputs;
  s.saved_source =
      "liger_kernel/ops/fused_linear_cross_entropy.py: LigerFusedLinearCrossEntropyFunction."
      "forward saves grad_input, grad_weight, grad_bias (computed in forward); backward returns "
      "them scaled by element_mul_kernel";
  s.amp_source = "liger_kernel/ops/utils.py amp_custom_fwd (torch.amp.custom_fwd, no cast_inputs)";
  return s;
}

}  // namespace

void RegisterFusedLossOps(OpRegistry& registry) { registry.Register(FusedLossSchema()); }

}  // namespace memplan
