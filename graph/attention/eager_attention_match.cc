// MatchEager: attention as eager PyTorch writes it (softmax(q kᵀ * scale + mask) v, with the
// variants attention_fusion.h lists), matched from its softmax outwards: forward to the MatMul
// with V, back through the mask or bias terms and the scales to the scores MatMul, then past
// repeat_kv to the K and V grouped-query attention reads.

#include <limits>
#include <set>
#include <vector>

#include "graph/attention/attention_patterns.h"
#include "graph/ops/sdpa_op.h"

namespace memplan::attention {
namespace {

// One eager attention while it is matched.
struct EagerMatch {
  Match m;
  double dropout_ratio = 0.0;
  ValueId v;    // MatMul(probs, v)'s second operand
  ValueId out;  // its output, the fused node's
  Scale scale;
  ValueId cur;  // walking back from the softmax's input towards the scores
  ValueId mask;
  double fill = -std::numeric_limits<double>::infinity();
  ValueId query;
  ValueId key;
  bool key_transposed = true;
};

// Whether `u` comes from the scores MatMul through scales and, with `adds` > 0, through the
// further additive terms of a chain of Adds: which operand of a mask node is the scores.
bool LeadsToScores(const Graph& g, ValueId u, int adds) {
  Scale probe;
  for (const Node* q = Producer(g, u); q != nullptr; q = Producer(g, u)) {
    if (IsOp(*q, "MatMul")) return true;
    if (IsOp(*q, "Add") && q->inputs.size() == 2 && adds > 0)
      return LeadsToScores(g, q->inputs[0], adds - 1) || LeadsToScores(g, q->inputs[1], adds - 1);
    auto x = StripScale(g, *q, probe);
    if (!x) return false;
    u = *x;
  }
  return false;
}

// The ratio a training-mode Dropout drops with: opset 12+ gives it as input 1 (torch writes a
// Constant), before as an attribute; training_mode 0 drops nothing. nullopt when either is
// computed at run time.
std::optional<double> DropoutRatio(const Graph& g, const Node& dropout) {
  double ratio = dropout.attributes.GetFloat("ratio", 0.5);
  if (dropout.inputs.size() > 1 && dropout.inputs[1].valid()) {
    auto constant = ConstantScalar(g, dropout.inputs[1]);
    if (!constant) return std::nullopt;
    ratio = *constant;
  }
  if (dropout.inputs.size() > 2 && dropout.inputs[2].valid()) {
    auto training = ConstantScalar(g, dropout.inputs[2]);
    if (!training) return std::nullopt;
    if (*training == 0.0) ratio = 0.0;
  }
  return ratio;
}

// Forward from the softmax: [Cast to the same dtype]* -> [NaN guard] -> [Dropout] ->
// MatMul(probs, v). HF's eager attention writes softmax(..., dtype=float32).to(query.dtype): in an
// fp32 export, casts that change nothing.
bool MatchForward(const Graph& g, const Node& s, EagerMatch& e) {
  ValueId probs = s.outputs[0];
  const Node* next = SoleConsumer(g, probs);
  while (next != nullptr && IsOp(*next, "Cast") && next->outputs.size() == 1 &&
         next->outputs[0].valid() && g.value(next->outputs[0]).dtype == g.value(probs).dtype) {
    e.m.removed.insert(next->id.index());
    probs = next->outputs[0];
    next = SoleConsumer(g, probs);
  }
  if (next == nullptr) {
    if (auto guarded = StripNanGuard(g, probs, e.m.removed)) {
      probs = *guarded;
      next = SoleConsumer(g, probs);
    }
  }
  if (next != nullptr && IsOp(*next, "Dropout")) {
    const std::optional<double> ratio = DropoutRatio(g, *next);
    if (!ratio) return false;  // a ratio computed at run time
    e.dropout_ratio = *ratio;
    e.m.removed.insert(next->id.index());
    probs = next->outputs[0];
    next = SoleConsumer(g, probs);
  } else if (next != nullptr && IsOp(*next, "Identity") && next->inputs.size() == 1) {
    // A zero-ratio Dropout the import fusions (graph/fusion/zero_dropout.cc) already rewrote.
    e.m.removed.insert(next->id.index());
    probs = next->outputs[0];
    next = SoleConsumer(g, probs);
  }
  if (next == nullptr || !IsOp(*next, "MatMul") || next->inputs[0] != probs) return false;
  e.m.removed.insert(next->id.index());
  e.m.anchor = next->id.index();
  e.v = next->inputs[1];
  e.out = next->outputs[0];
  return true;
}

// The additive terms before the softmax, outermost first: a mask, and HF's T5 writes its position
// bias as a second Add before it (scores + position_bias + mask). A zero constant adds nothing
// (T5's cross-attention bias is torch.zeros).
bool MatchAdditiveTerms(const Graph& g, EagerMatch& e) {
  FusedAttention& summary = e.m.summary;
  std::vector<ValueId> terms;
  int adds = 0;
  for (const Node* p = Producer(g, e.cur); p != nullptr && IsOp(*p, "Add") && p->inputs.size() == 2;
       p = Producer(g, e.cur)) {
    const int chain = LeadsToScores(g, p->inputs[0], kMaxAdditiveTerms)   ? 0
                      : LeadsToScores(g, p->inputs[1], kMaxAdditiveTerms) ? 1
                                                                          : -1;
    if (chain < 0 || ++adds > kMaxAdditiveTerms) return false;
    const ValueId term = p->inputs[static_cast<size_t>(1 - chain)];
    // A learned score bias (T5's relative-position bias, Swin's and BEiT's tables) is trained
    // through the scores: the mask PyTorch's SDPA receives requires grad.
    if (DependsOnTrainedParameter(g, term)) summary.mask_requires_grad = true;
    if (!IsZeroConstant(g, term)) terms.push_back(term);
    e.m.removed.insert(p->id.index());
    e.cur = p->inputs[static_cast<size_t>(chain)];
  }
  // The fused op reads one mask: two runtime terms are fused only where the match is kept as
  // written anyway (a mask that requires grad runs the math kernel, FuseAttention).
  if (terms.size() > 1 && !summary.mask_requires_grad) return false;
  if (!terms.empty()) {
    e.mask = terms.back();  // the innermost (for a kept match only its existence matters)
    summary.mask = sdpa::kMaskAdd;
  }
  return true;
}

// Back from the softmax's input: [Add mask or bias terms | Where(mask, scores, fill) |
// Where(mask, fill, scores)].
bool MatchMask(const Graph& g, EagerMatch& e) {
  const Node* p = Producer(g, e.cur);
  if (p != nullptr && IsOp(*p, "Add") && p->inputs.size() == 2) return MatchAdditiveTerms(g, e);
  if (p == nullptr || !IsOp(*p, "Where") || p->inputs.size() != 3) return true;
  e.mask = p->inputs[0];
  if (LeadsToScores(g, p->inputs[1], 0) && ConstantScalar(g, p->inputs[2])) {
    e.cur = p->inputs[1];
    e.fill = *ConstantScalar(g, p->inputs[2]);
    e.m.summary.mask = sdpa::kMaskKeep;
  } else if (LeadsToScores(g, p->inputs[2], 0) && ConstantScalar(g, p->inputs[1])) {
    e.cur = p->inputs[2];
    e.fill = *ConstantScalar(g, p->inputs[1]);
    e.m.summary.mask = sdpa::kMaskFillWhere;
  } else {
    return false;
  }
  e.m.removed.insert(p->id.index());
  return true;
}

// [scale]* <- MatMul(q, kᵀ), each operand possibly scaled on its own (q / sqrt(sqrt(d)) twice).
bool MatchScores(const Graph& g, EagerMatch& e) {
  const Node* p = Producer(g, e.cur);
  for (; p != nullptr && !IsOp(*p, "MatMul"); p = Producer(g, e.cur)) {
    auto x = StripScale(g, *p, e.scale);
    if (!x) return false;
    e.m.removed.insert(p->id.index());
    e.cur = *x;
  }
  if (p == nullptr) return false;
  const Node& qk = *p;
  e.m.removed.insert(qk.id.index());
  ValueId operands[2] = {qk.inputs[0], qk.inputs[1]};
  for (ValueId& u : operands) {
    const Node* q = Producer(g, u);
    if (q == nullptr || SoleConsumer(g, u) != &qk) continue;
    if (auto x = StripScale(g, *q, e.scale)) {
      e.m.removed.insert(q->id.index());
      u = *x;
    }
  }
  e.query = operands[0];
  e.key = operands[1];
  return true;
}

// Grouped-query attention: the fused node reads K and V before repeat_kv, and the key itself where
// the graph transposed it (by hand or through 3D as the dynamo exporter does).
void StripKeyValueRepeats(const Graph& g, EagerMatch& e) {
  FusedAttention& summary = e.m.summary;
  const auto strip_repeat = [&](ValueId& u) {
    std::set<size_t> repeat;
    if (auto x = StripRepeat(g, u, repeat)) {
      e.m.removed.insert(repeat.begin(), repeat.end());
      u = *x;
      summary.grouped_query = true;
    }
  };
  const Node* t = Producer(g, e.key);
  if (t != nullptr && IsTransposeOfLastTwo(*t)) {
    std::set<size_t> repeat;
    if (auto x = StripRepeat(g, t->inputs[0], repeat)) {
      e.m.removed.insert(repeat.begin(), repeat.end());
      e.m.removed.insert(t->id.index());
      e.key = *x;
      e.key_transposed = false;
      summary.grouped_query = true;
    }
  } else if (std::set<size_t> swap; auto k = StripTransposeThrough3d(g, e.key, swap)) {
    // The exporter's own swap of the key's axes: SDPA reads the key itself, repeated or not.
    e.m.removed.insert(swap.begin(), swap.end());
    e.key = *k;
    e.key_transposed = false;
    strip_repeat(e.key);
  } else {
    strip_repeat(e.key);
  }
  strip_repeat(e.v);
}

// The memplan:ScaledDotProductAttention node the match becomes, named after the softmax's scope.
void BuildFusedNode(const Node& s, EagerMatch& e) {
  Node& f = e.m.fused;
  const Scale& scale = e.scale;
  f.op_type = sdpa::kOpType;
  f.domain = sdpa::kDomain;
  f.inputs = {e.query, e.key, e.v};
  if (e.mask.valid() || scale.multiplier.valid() || scale.divisor.valid())
    f.inputs.push_back(e.mask);
  if (scale.multiplier.valid() || scale.divisor.valid()) f.inputs.push_back(scale.multiplier);
  if (scale.divisor.valid()) f.inputs.push_back(scale.divisor);
  f.outputs = {e.out};
  f.attributes.Set(sdpa::kScale, scale.factor);
  f.attributes.Set(sdpa::kKeyTransposed, int64_t{e.key_transposed ? 1 : 0});
  f.attributes.Set(sdpa::kMaskMode, e.m.summary.mask);
  f.attributes.Set(sdpa::kMaskFill, e.fill);
  f.attributes.Set(sdpa::kDropoutRatio, e.dropout_ratio);
  e.m.summary.dropout = e.dropout_ratio > 0.0;
  f.name = ScopeOf(s.name);
}

}  // namespace

std::optional<Match> MatchEager(const Graph& g, const Node& s) {
  if (!IsOp(s, "Softmax") || s.inputs.size() != 1 || s.outputs.size() != 1) return std::nullopt;
  if (!SoftmaxOverLastAxis(g, s)) return std::nullopt;
  EagerMatch e;
  e.m.removed.insert(s.id.index());
  e.m.summary.mask = sdpa::kMaskNone;
  if (!MatchForward(g, s, e)) return std::nullopt;
  e.cur = s.inputs[0];
  if (!MatchMask(g, e) || !MatchScores(g, e)) return std::nullopt;
  const int rank = Rank(g, e.query);
  if ((rank != 3 && rank != 4) || Rank(g, e.key) != rank || Rank(g, e.v) != rank)
    return std::nullopt;
  if (!IsFloating(g.value(e.query).dtype)) return std::nullopt;
  if (rank == 4) StripKeyValueRepeats(g, e);
  if (!SelfContained(g, e.m.removed, e.out)) return std::nullopt;
  BuildFusedNode(s, e);
  return std::move(e.m);
}

}  // namespace memplan::attention
