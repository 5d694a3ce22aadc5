// The attention ops exporters write whole: ONNX's Attention (opset 23) and ORT's
// com.microsoft MultiHeadAttention, each fused as one memplan:ScaledDotProductAttention when its
// form is one SDPA runs.

#include "graph/attention/attention_patterns.h"

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>
#include <utility>

#include "graph/ops/sdpa_op.h"

namespace memplan::attention {
namespace {

// The head size of an attention op with 3D inputs ([B, S, heads * head], `q_heads` and
// `kv_heads` counted by its attributes): nullopt unless the hidden sizes are known whole heads
// of one size.
std::optional<int64_t> PackedHeadSize(const Graph& g, const Node& a, int64_t q_heads,
                                      int64_t kv_heads) {
  auto q_hidden = g.value(a.inputs[0]).shape.dims[2].constant_value();
  auto k_hidden = g.value(a.inputs[1]).shape.dims[2].constant_value();
  auto v_hidden = g.value(a.inputs[2]).shape.dims[2].constant_value();
  if (q_heads <= 0 || kv_heads <= 0 || q_heads % kv_heads != 0 || !q_hidden || !k_hidden ||
      !v_hidden || *q_hidden % q_heads != 0 || *v_hidden % kv_heads != 0)
    return std::nullopt;
  const int64_t head = *q_hidden / q_heads;
  if (head <= 0 || *k_hidden != head * kv_heads) return std::nullopt;
  return head;
}

// Whether only the first output of `a` is read (present key/value, the scores stay unused).
bool OnlyFirstOutputUsed(const Graph& g, const Node& a) {
  for (size_t j = 1; j < a.outputs.size(); ++j) {
    if (!a.outputs[j].valid()) continue;
    const Value& o = g.value(a.outputs[j]);
    if (o.is_graph_output || !o.consumers.empty()) return false;
  }
  return true;
}

// What an attention op (ONNX's or ONNX Runtime's) becomes: the fused node on its q, k, v and
// optional mask (`mask`, invalid for none), 3D packed when `packed_head` is set.
struct AttentionOpForm {
  ValueId mask;
  std::optional<int64_t> packed_head;
  double scale = 1.0;
  bool causal = false;
  bool grouped_query = false;
};

Match FusedAttentionOp(const Graph& g, const Node& a, const AttentionOpForm& form) {
  Match m;
  m.removed.insert(a.id.index());
  m.anchor = a.id.index();
  FusedAttention& summary = m.summary;
  Node& f = m.fused;
  f.op_type = sdpa::kOpType;
  f.domain = sdpa::kDomain;
  f.inputs = {a.inputs[0], a.inputs[1], a.inputs[2]};
  f.outputs = {a.outputs[0]};
  summary.mask = sdpa::kMaskNone;
  if (form.mask.valid()) {
    f.inputs.push_back(form.mask);
    // A boolean mask marks the positions that take part; a float mask is added.
    summary.mask = g.value(form.mask).dtype == DType::kBool ? sdpa::kMaskKeep : sdpa::kMaskAdd;
  }
  if (form.causal && summary.mask == sdpa::kMaskNone) summary.mask = "causal";
  summary.grouped_query = form.grouped_query;
  if (form.packed_head) f.attributes.Set(sdpa::kHeadSize, *form.packed_head);
  f.attributes.Set(sdpa::kScale, form.scale);
  f.attributes.Set(sdpa::kKeyTransposed, int64_t{0});
  f.attributes.Set(sdpa::kMaskMode,
                   f.inputs.size() > 3 ? std::string(summary.mask) : std::string(sdpa::kMaskNone));
  f.attributes.Set(sdpa::kMaskFill, -std::numeric_limits<double>::infinity());
  f.attributes.Set(sdpa::kIsCausal, int64_t{form.causal ? 1 : 0});
  f.name = a.name;
  return m;
}

// 1/sqrt(head): the scale of an attention op that sets none.
std::optional<double> InverseSqrt(std::optional<int64_t> head) {
  if (!head || *head <= 0) return std::nullopt;
  return 1.0 / std::sqrt(static_cast<double>(*head));
}

}  // namespace

// The ONNX Attention op, 4D or 3D, no past, only Y used, no softcap.
std::optional<Match> MatchOnnxAttention(const Graph& g, const Node& a) {
  if (!IsOp(a, "Attention") || a.inputs.size() < 3 || a.outputs.empty()) return std::nullopt;
  for (size_t i = 4; i < a.inputs.size(); ++i)
    if (a.inputs[i].valid()) return std::nullopt;  // past key / value
  if (!OnlyFirstOutputUsed(g, a)) return std::nullopt;
  if (a.attributes.GetFloat("softcap", 0.0) != 0.0) return std::nullopt;
  const int rank = Rank(g, a.inputs[0]);
  if (rank != 3 && rank != 4) return std::nullopt;
  for (size_t i = 1; i < 3; ++i)
    if (Rank(g, a.inputs[i]) != rank) return std::nullopt;
  AttentionOpForm form;
  const int64_t q_heads = a.attributes.GetInt("q_num_heads", 0);
  const int64_t kv_heads = a.attributes.GetInt("kv_num_heads", 0);
  if (rank == 3) {
    form.packed_head = PackedHeadSize(g, a, q_heads, kv_heads);
    if (!form.packed_head) return std::nullopt;
    form.grouped_query = q_heads != kv_heads;
  } else {
    form.grouped_query =
        !(g.value(a.inputs[0]).shape.dims[1] == g.value(a.inputs[1]).shape.dims[1]);
  }
  const std::optional<int64_t> head =
      form.packed_head ? form.packed_head : g.value(a.inputs[0]).shape.dims[3].constant_value();
  const std::optional<double> scale = a.attributes.Has("scale")
                                          ? std::optional<double>(a.attributes.GetFloat("scale", 0))
                                          : InverseSqrt(head);
  if (!scale) return std::nullopt;
  form.scale = *scale;
  if (a.inputs.size() > 3) form.mask = a.inputs[3];
  form.causal = a.attributes.GetInt("is_causal", 0) != 0;
  return FusedAttentionOp(g, a, form);
}

// ONNX Runtime's com.microsoft MultiHeadAttention on separate 3D query, key and value
// ([B, S, num_heads * head]), as its transformer optimizer writes self- and cross-attention
// without a projection bias: the fused kernel PyTorch's SDPA runs too. attention_bias (slot 5)
// is an additive mask; a bias, key_padding_mask, past key/value, or read present outputs leave it
// eager (the registry's eager entry, graph/ops/attention_ops.cc).
std::optional<Match> MatchOrtMultiHeadAttention(const Graph& g, const Node& a) {
  if (a.op_type != "MultiHeadAttention" || a.domain != "com.microsoft" || a.inputs.size() < 3 ||
      a.outputs.empty())
    return std::nullopt;
  for (size_t i = 0; i < 3; ++i)
    if (!a.inputs[i].valid() || Rank(g, a.inputs[i]) != 3) return std::nullopt;
  for (size_t i = 3; i < a.inputs.size(); ++i)
    if (i != 5 && a.inputs[i].valid()) return std::nullopt;
  if (!OnlyFirstOutputUsed(g, a)) return std::nullopt;
  const int64_t heads = a.attributes.GetInt("num_heads", 0);
  AttentionOpForm form;
  form.packed_head = PackedHeadSize(g, a, heads, heads);
  if (!form.packed_head) return std::nullopt;
  // Its scale 0 (the default) means 1/sqrt(head).
  const double set_scale = a.attributes.GetFloat("scale", 0.0);
  const std::optional<double> scale =
      set_scale != 0.0 ? std::optional<double>(set_scale) : InverseSqrt(form.packed_head);
  if (!scale) return std::nullopt;
  form.scale = *scale;
  if (a.inputs.size() > 5) form.mask = a.inputs[5];
  if (form.mask.valid() && g.value(form.mask).dtype == DType::kBool) return std::nullopt;
  form.causal = a.attributes.GetInt("unidirectional", 0) != 0;
  return FusedAttentionOp(g, a, form);
}

}  // namespace memplan::attention
