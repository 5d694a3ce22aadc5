#pragma once
// Recognises attention in an imported Graph and rewrites each one into one
// memplan:ScaledDotProductAttention node (graph/ops/sdpa_op.h), the op PyTorch 2 runs for
// scaled_dot_product_attention. Used by `--attention sdpa|auto`; `eager` leaves the graph as
// imported, which is what a hand-written attention block runs in eager PyTorch.
//
// Why a rewrite of the Graph (after import, not of the ONNX proto): the matcher needs shapes
// (softmax over the last axis of a rank-3/4 score tensor, GQA head counts), which exist only after
// shape propagation, and the simulator and the CPU executor must both see the same fused node.
//
// Recognised, as exporters write them (torch.onnx, the zoo, HF models):
//
//   q ─[Mul/Div by scalar]─┐
//                          MatMul ─[Mul/Div by scalar]*─[Add bias][Add mask | Where(mask, ·, fill)
//                          |
//   kᵀ ─[Mul/Div by scalar]┘        Where(mask, fill, ·)]─ Softmax(last axis) ─[Dropout]─ MatMul ─
//   out
//                                                                                     v ──┘
//   with optional repeat_kv on k and v (Unsqueeze(axis 2) → Expand → Reshape to [B, H, S, D],
//   possibly followed by the key's Transpose(0, 1, 3, 2)): the fused node reads the un-repeated
//   K and V, as flash kernels do for grouped-query / multi-query attention.
//   The bias Add is T5's (scores + position_bias + mask, no scaling: HF multiplies by 1.0); a zero
//   constant term (T5's cross-attention bias, torch.zeros) adds nothing. A term that depends on a
//   trained parameter makes a mask that requires grad: recognised, never fused (FusedAttention::
//   mask_requires_grad).
//   And the ONNX Attention op (opset 23) with 4D inputs, no past key/value, only output Y used and
//   no softcap.
//
// A pattern is fused only when every tensor inside it (scores, probabilities, dropout mask,
// repeated K/V) is read by nothing outside it and is not a graph output, and every scale and fill
// is a one-element constant: an extra reader of the S×S scores means the real program keeps them,
// so it stays eager. Dead constant sub-graphs that fed only the pattern are removed with it.

#include <functional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace memplan {

// One fused attention, for reports.
struct FusedAttention {
  std::string node;  // the fused node's name
  // The eager nodes it replaces, in graph order (kept as written: the pattern's nodes).
  std::vector<std::string> replaced;
  std::string mask;            // sdpa::kMask* mode, or "causal" (ONNX Attention is_causal)
  bool grouped_query = false;  // K/V read un-repeated (fewer kv heads than query heads)
  bool dropout = false;
  // An additive term of the scores depends on a trained parameter (T5's relative-position bias,
  // Swin's table): the mask SDPA would receive requires grad. Never fused: kept as written (the
  // math kernel, which keeps what eager keeps).
  bool mask_requires_grad = false;
};

struct AttentionFusion {
  Graph graph;  // the rewritten graph (the input graph unchanged when nothing matched)
  std::vector<FusedAttention> fused;
  std::vector<FusedAttention> kept_eager;  // recognised, but `keep_eager` left them as written
};

// Says of a recognised attention that it runs as written (the caller knows that PyTorch's SDPA
// would run its math kernel, which keeps what eager keeps).
using KeepEager = std::function<bool(const FusedAttention&)>;

// Rewrites every recognised attention of `graph` that `keep_eager` (when set) does not keep.
// Value and node ids change when something is fused (the graph is rebuilt); names of surviving
// values and nodes do not.
AttentionFusion FuseAttention(Graph graph, const KeepEager& keep_eager = {});

// Rewrites the dynamo exporter's NaN guard of attention probabilities, Where(IsNaN(P), 0, P)
// after a Softmax over the last axis (onnxscript's decomposition of
// scaled_dot_product_attention), into Identity(P): no tensor torch makes where attention runs
// as written. HF's eager attention has no guard, and SDPA's math kernel computes it inside
// _safe_softmax, whose backward keeps only its result. Kept, the guard's output would be a
// second S x S tensor the next MatMul saves. Returns the graph unchanged when none is found;
// `stripped` (when set) receives how many were.
Graph StripSoftmaxNanGuards(Graph graph, size_t* stripped = nullptr);

}  // namespace memplan
