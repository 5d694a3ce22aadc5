// rms_norm: RMSNorm written out (LLaMA's LlamaRMSNorm, T5's T5LayerNorm):
//   r = 1 / Sqrt(Add(ReduceMean(x^2, axes=[-k..-1]), eps));  y = (x * r) * w
// exported below opset 23 as Pow(x, 2) or Mul(x, x), ReduceMean, Add(eps), Sqrt, then
// Reciprocal, Div(1, .) (torch.rsqrt) and Mul(x, .), or Div(x, .); then Mul(w). Fused into
// RMSNormalization (opset 23) with axis = -k and epsilon = eps, which the registry plans as
// PyTorch's fused _fused_rms_norm (input, weight and rstd kept).
//
// PyTorch 1.13 has no RMSNorm op: this chain always comes from a formula, which eager autograd
// runs op by op (torch 1.13 keeps x, the normalised x * r and rstd: one activation-sized tensor
// more than the fused kernel). So the entry is applied only under FusionSet::kAll, for runs that
// use a fused RMSNorm kernel (nn.RMSNorm on recent PyTorch, torch.compile, Apex, Liger).
//
// Exact only when the reduction is over trailing axes with keepdims = 1, every intermediate feeds
// only the next node, the same x is squared and normalised, and w is an initializer of rank <= k
// (or 1 + one, below).
// Hugging Face's LlamaRMSNorm (Mistral's, Qwen2's: the same code) computes in fp32 and casts back
// before the weight, `hidden_states.to(torch.float32)` ... `weight *
// hidden_states.to(input_dtype)`: exported as Cast(x) read by the square and the normalisation, and
// a Cast between the normalisation and Mul(w). Both Casts together join the match (the fused node
// reads x as given and writes the input's dtype, as the cast back does); one without the other
// leaves the chain as is.
//
// Gemma's GemmaRMSNorm scales by 1 + w, in fp32, and casts back after the scale: `output *
// (1.0 + self.weight.float())` then `.type_as(x)`, exported (torch 2.15, opset 17, fp32) as the
// upcast Cast(x) read by the square, the normalisation and the residual Add, Cast(w) and
// Add(., 1), the scale Mul, and no cast back (type_as to the same dtype writes nothing). The scale
// Mul's operand may be that 1 + w (Add(w, 1) or Add(Cast(w), 1), the one on either side): the
// Add and Cast stay outside the match and the fused node reads their weight-sized output, so it
// computes x * r * (1 + w) as written (Liger's LigerRMSNorm with offset=1.0 for Gemma). Not
// matched yet: a bf16 Gemma's cast back, which follows the scale Mul rather than the
// normalisation; there the upcast stays and the fused node reads and writes its fp32 copy.

#include "graph/fusion/patterns.h"

namespace memplan {

namespace {

int64_t CastTo(const onnx::NodeProto& cast) {
  for (const auto& a : cast.attribute())
    if (a.name() == "to") return a.i();
  return -1;
}

// HF's casts around the chain (see above): the upcast x = Cast(input) read by the square and the
// normalisation, and the cast back between the normalisation and the weight. Adds those that
// join to `m` and moves `x` (to the upcast's input) and `normalized` (to the cast back's output).
void JoinHfCasts(const ProtoIndex& index, int square, int normalize, FusionMatch& m, std::string& x,
                 std::string& normalized) {
  const std::optional<int> upcast = index.Producer(x);
  if (!upcast || !IsOp(index.node(*upcast), "Cast", 1) || index.IsGraphOutput(x)) return;
  const std::optional<int> cast_back = SoleConsumerOp(index, normalized, "Cast", 1);
  if (!cast_back) return;
  bool upcast_joins = true;
  for (int reader : index.Consumers(x)) upcast_joins &= reader == square || reader == normalize;
  // An upcast the rest of the graph reads as well (an fp32 model's no-op .to(float32), which the
  // exporter lets the residual Add read) stays; the fused node then reads it and writes its
  // dtype, which the cast back must keep.
  if (!upcast_joins && CastTo(index.node(*cast_back)) != CastTo(index.node(*upcast))) return;
  m.nodes.push_back(*cast_back);
  normalized = index.node(*cast_back).output(0);
  if (!upcast_joins) return;
  m.nodes.insert(m.nodes.begin(), *upcast);
  x = index.node(*upcast).input(0);
}

// The scale the normalised x is multiplied by: a weight, or Gemma's 1 + w (see above).
bool IsScale(const ProtoIndex& index, const std::string& scale, int max_rank) {
  if (IsSmallRankWeight(index, scale, max_rank)) return true;
  const std::optional<int> add = index.Producer(scale);
  if (!add || !IsOp(index.node(*add), "Add", 2)) return false;
  std::optional<std::string> w = OtherThanScalar(index.node(*add), index, 1.0, true);
  if (!w) return false;
  if (const std::optional<int> cast = index.Producer(*w);
      cast && IsOp(index.node(*cast), "Cast", 1))
    w = index.node(*cast).input(0);
  return IsSmallRankWeight(index, *w, max_rank);
}

}  // namespace

std::optional<FusionMatch> MatchRmsNorm(const ProtoIndex& index, int mean_node) {
  const auto& mean = index.node(mean_node);
  auto k = TrailingReduceMeanAxes(index, mean);
  if (!k) return std::nullopt;
  // The square of x, feeding only the mean.
  const std::string& squared = mean.input(0);
  auto square = index.Producer(squared);
  if (!square || !index.SoleConsumer(squared)) return std::nullopt;
  const auto& sq = index.node(*square);
  std::optional<std::string> x;
  if (IsOp(sq, "Pow", 2) && Near(index.Scalar(sq.input(1)), 2.0)) x = sq.input(0);
  if (IsOp(sq, "Mul", 2) && sq.input(0) == sq.input(1)) x = sq.input(0);
  if (!x) return std::nullopt;
  auto add_eps = SoleConsumerOp(index, mean.output(0), "Add", 2);
  if (!add_eps) return std::nullopt;
  auto eps_name = OtherOperand(index.node(*add_eps), mean.output(0));
  auto eps = eps_name ? index.Scalar(*eps_name) : std::nullopt;
  if (!eps || *eps < 0) return std::nullopt;
  auto sqrt = SoleConsumerOp(index, index.node(*add_eps).output(0), "Sqrt", 1);
  if (!sqrt) return std::nullopt;
  const std::string& root = index.node(*sqrt).output(0);

  FusionMatch m;
  m.nodes = {*square, mean_node, *add_eps, *sqrt};
  // x / root, or x * (1 / root) with the reciprocal as Reciprocal or Div(1, root).
  std::optional<int> normalize;
  auto after_root = index.SoleConsumer(root);
  if (!after_root) return std::nullopt;
  const auto& n = index.node(*after_root);
  if (IsOp(n, "Div", 2) && n.input(1) == root && n.input(0) == *x) {
    normalize = after_root;
  } else {
    const bool reciprocal = IsOp(n, "Reciprocal", 1) || (IsOp(n, "Div", 2) && n.input(1) == root &&
                                                         Near(index.Scalar(n.input(0)), 1.0));
    if (!reciprocal) return std::nullopt;
    m.nodes.push_back(*after_root);
    auto mul = SoleConsumerOp(index, n.output(0), "Mul", 2);
    if (!mul || OtherOperand(index.node(*mul), n.output(0)) != *x) return std::nullopt;
    normalize = mul;
  }
  m.nodes.push_back(*normalize);
  std::string normalized = index.node(*normalize).output(0);
  JoinHfCasts(index, *square, *normalize, m, *x, normalized);
  auto scale_node = SoleConsumerOp(index, normalized, "Mul", 2);
  if (!scale_node) return std::nullopt;
  auto w = OtherOperand(index.node(*scale_node), normalized);
  if (!w || *w == normalized || !IsScale(index, *w, *k)) return std::nullopt;
  m.nodes.push_back(*scale_node);
  m.last = *scale_node;
  m.fused = FusedNode("RMSNormalization", "", {*x, *w}, index.node(*scale_node).output(0));
  SetIntAttribute(m.fused, "axis", -*k);
  SetFloatAttribute(m.fused, "epsilon", static_cast<float>(*eps));
  return m;
}

}  // namespace memplan
