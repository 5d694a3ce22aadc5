#pragma once
// The pieces attention_fusion.cc's matchers share (graph/attention/ internal): the match a
// recogniser returns, and the small graph queries and strips each pattern is built from (a
// producer, a sole reader, a folded scale, repeat_kv, the exporter's key swap and NaN guard).
// The matchers: MatchEager (eager_attention_match.cc), MatchOnnxAttention and
// MatchOrtMultiHeadAttention (attention_op_match.cc).

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graph/attention/attention_fusion.h"
#include "graph/graph.h"

namespace memplan::attention {

// One recognised attention: the node that replaces it and the nodes it replaces.
struct Match {
  Node fused;                // ids of the original graph
  std::set<size_t> removed;  // node indices of the eager pattern
  size_t anchor = 0;         // where the fused node goes (the last MatMul / the Attention op)
  FusedAttention summary;
};

bool IsOp(const Node& n, const char* op);

const Node* Producer(const Graph& g, ValueId u);

// The one node reading `u` (once), when exactly one does and `u` is not a graph output.
const Node* SoleConsumer(const Graph& g, ValueId u);

int Rank(const Graph& g, ValueId u);

// Whether `v` never changes: a constant, or a floating initializer nothing trains (torch's dynamo
// exporter lifts the scalars of its decompositions, SDPA's scale and fills, into initializers the
// graph signature names as neither parameter nor buffer: graph/exported_buffers.h), or an
// elementwise op of such (the decomposition's Sqrt(scale)), a few ops deep.
bool IsFixed(const Graph& g, const Value& v, int depth = 3);

// The value of a one-element constant whose value the importer kept (a Constant node's tensor or
// value_float, folded integer contents, a fixed initializer's value); nullopt otherwise.
std::optional<double> ConstantScalar(const Graph& g, ValueId u);

// A one-element floating constant whose value is known only when the executor folds it (torch's
// 1/sqrt(k.size(-1)) from a Shape sub-graph): the fused node reads it as an input.
bool IsConstantScalarTensor(const Graph& g, ValueId u);

// How the scores are scaled: a product of known factors and at most one folded multiplier and
// one folded divisor.
struct Scale {
  double factor = 1.0;
  ValueId multiplier;
  ValueId divisor;
};

// `s` when `a` and `b` are both Sqrt(s) (two nodes of one input): sqrt(s) * sqrt(s) = s.
std::optional<ValueId> SameSquareRoot(const Graph& g, ValueId a, ValueId b);

// If `n` is Mul/Div of `operand` by a scalar constant, folds the scalar into `scale` and returns
// the other operand. Mul is commutative; Div only divides.
std::optional<ValueId> StripScale(const Graph& g, const Node& n, Scale& scale);

// repeat_kv: x [B, Hkv, a, b] -> Unsqueeze(axis 2) -> Expand [B, Hkv, n, a, b] -> Reshape
// [B, Hkv*n, a, b]. Returns x and adds the three nodes to `nodes` when `w` is such a repeat.
std::optional<ValueId> StripRepeat(const Graph& g, ValueId w, std::set<size_t>& nodes);

bool IsTransposeOfLastTwo(const Node& n);

// Adds to `nodes` the shape arithmetic (Shape -> Slice -> Concat: nodes making constant values)
// behind `shapes` that only `nodes` read: the target shapes of Reshapes the fusion removes. A Shape
// node reads a tensor without keeping it, but that tensor must survive the rewrite, so the Shape
// goes with the pattern.
void AddShapeArithmetic(const Graph& g, const std::vector<ValueId>& shapes,
                        std::set<size_t>& nodes);

// torch.onnx's dynamo decomposition of scaled_dot_product_attention (onnxscript's torchlib
// aten_scaled_dot_product_attention: "contract the dimensions that are not the last two so we can
// transpose with a static permutation") swaps the key's last two axes through 3D: Reshape [B*H, S,
// D] -> Transpose(0, 2, 1) -> Reshape [B, H, D, S]. Returns the 4D key [B, H, S, D] and adds the
// three nodes and their shape arithmetic to `nodes` when `key_t` is such a swap.
std::optional<ValueId> StripTransposeThrough3d(const Graph& g, ValueId key_t,
                                               std::set<size_t>& nodes);

// torch.onnx's dynamo decomposition guards the probabilities against fully masked rows:
// Where(IsNaN(P), 0, P). Returns the guarded probabilities and adds the two nodes to `nodes`
// when `probs` is read by exactly that guard (SDPA's kernels write no NaN for such rows either).
std::optional<ValueId> StripNanGuard(const Graph& g, ValueId probs, std::set<size_t>& nodes);

std::string ScopeOf(const std::string& name);

// Every value a node of `nodes` makes, except `output`, is read only inside `nodes` and is not a
// graph output: otherwise the real program keeps it, and fusing would undercount.
bool SelfContained(const Graph& g, const std::set<size_t>& nodes, ValueId output);

bool SoftmaxOverLastAxis(const Graph& g, const Node& s);

// Whether `v` is computed, through floating values, from a parameter that is trained (a
// floating, unfrozen initializer). Shapes, indices and booleans carry no gradient, nor does
// CastLike's dtype operand (HF builds its masks from the embeddings' shape and dtype).
bool DependsOnTrainedParameter(const Graph& g, ValueId v);

// The additive terms of the scores an eager attention may have: a mask, and a position bias
// before it (HF's T5: scores + position_bias + mask).
constexpr int kMaxAdditiveTerms = 2;

// A tensor of zeros: ConstantOfShape with no value (ONNX's default 0) or a zero value, or a
// one-element constant 0. torch.zeros exports as the first.
bool IsZeroConstant(const Graph& g, ValueId u);

// Attention as eager PyTorch writes it, matched from its softmax `s` (eager_attention_match.cc).
std::optional<Match> MatchEager(const Graph& g, const Node& s);
// The ONNX Attention op (opset 23) and ORT's com.microsoft MultiHeadAttention
// (attention_op_match.cc).
std::optional<Match> MatchOnnxAttention(const Graph& g, const Node& a);
std::optional<Match> MatchOrtMultiHeadAttention(const Graph& g, const Node& a);

}  // namespace memplan::attention
