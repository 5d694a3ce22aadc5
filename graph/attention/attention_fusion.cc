#include "graph/attention/attention_fusion.h"

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>
#include <utility>

#include "graph/model_facts.h"
#include "graph/ops/sdpa_op.h"

namespace memplan {
namespace {

// One recognised attention: the node that replaces it and the nodes it replaces.
struct Match {
  Node fused;                // ids of the original graph
  std::set<size_t> removed;  // node indices of the eager pattern
  size_t anchor = 0;         // where the fused node goes (the last MatMul / the Attention op)
  FusedAttention summary;
};

bool IsOp(const Node& n, const char* op) { return n.op_type == op && n.domain.empty(); }

const Node* Producer(const Graph& g, ValueId u) {
  if (!u.valid()) return nullptr;
  const Value& v = g.value(u);
  return v.producer.valid() ? &g.node(v.producer) : nullptr;
}

// The one node reading `u` (once), when exactly one does and `u` is not a graph output.
const Node* SoleConsumer(const Graph& g, ValueId u) {
  const Value& v = g.value(u);
  if (v.is_graph_output || v.consumers.size() != 1) return nullptr;
  return &g.node(v.consumers[0]);
}

int Rank(const Graph& g, ValueId u) {
  const Value& v = g.value(u);
  return v.shape.known ? static_cast<int>(v.shape.rank()) : -1;
}

// Whether `v` never changes: a constant, or a floating initializer nothing trains (torch's dynamo
// exporter lifts the scalars of its decompositions, SDPA's scale and fills, into initializers the
// graph signature names as neither parameter nor buffer: graph/exported_buffers.h), or an
// elementwise op of such (the decomposition's Sqrt(scale)), a few ops deep.
bool IsFixed(const Graph& g, const Value& v, int depth = 3) {
  if (v.kind == ValueKind::kConstant) return true;
  if (v.kind == ValueKind::kParameter) return (!v.trainable || v.frozen) && !v.producer.valid();
  if (depth == 0 || !v.producer.valid()) return false;
  const Node& p = g.node(v.producer);
  if (!p.domain.empty() || (p.op_type != "Sqrt" && p.op_type != "Reciprocal" &&
                            p.op_type != "Cast" && p.op_type != "Neg"))
    return false;
  for (ValueId in : p.inputs)
    if (!in.valid() || !IsFixed(g, g.value(in), depth - 1)) return false;
  return true;
}

// The value of a one-element constant whose value the importer kept (a Constant node's tensor or
// value_float, folded integer contents, a fixed initializer's value); nullopt otherwise.
std::optional<double> ConstantScalar(const Graph& g, ValueId u) {
  if (!u.valid()) return std::nullopt;
  const Value& v = g.value(u);
  if (!IsFixed(g, v)) return std::nullopt;
  if (v.contents && v.contents->size() == 1) {
    if (auto c = v.contents->front().constant_value()) return static_cast<double>(*c);
  }
  if (v.float_values && v.float_values->size() == 1) return v.float_values->front();
  const Node* p = Producer(g, u);
  if (p == nullptr || !IsOp(*p, "Constant")) return std::nullopt;
  if (const TensorAttribute* t = p->attributes.GetTensor("value")) {
    if (t->float_values.size() == 1) return t->float_values.front();
    if (t->int_values.size() == 1) return static_cast<double>(t->int_values.front());
    return std::nullopt;
  }
  if (p->attributes.Has("value_float")) return p->attributes.GetFloat("value_float", 0.0);
  return std::nullopt;
}

// A one-element floating constant whose value is known only when the executor folds it (torch's
// 1/sqrt(k.size(-1)) from a Shape sub-graph): the fused node reads it as an input.
bool IsConstantScalarTensor(const Graph& g, ValueId u) {
  const Value& v = g.value(u);
  if (!IsFixed(g, v) || !IsFloating(v.dtype) || !v.shape.known) return false;
  return v.shape.NumElements().constant_value() == 1;
}

// How the scores are scaled: a product of known factors and at most one folded multiplier and
// one folded divisor.
struct Scale {
  double factor = 1.0;
  ValueId multiplier;
  ValueId divisor;
};

// `s` when `a` and `b` are both Sqrt(s) (two nodes of one input): sqrt(s) * sqrt(s) = s.
std::optional<ValueId> SameSquareRoot(const Graph& g, ValueId a, ValueId b) {
  const Node* ra = Producer(g, a);
  const Node* rb = Producer(g, b);
  if (ra == nullptr || rb == nullptr || !IsOp(*ra, "Sqrt") || !IsOp(*rb, "Sqrt") ||
      ra->inputs.size() != 1 || rb->inputs.size() != 1 || ra->inputs[0] != rb->inputs[0] ||
      !IsConstantScalarTensor(g, ra->inputs[0]))
    return std::nullopt;
  return ra->inputs[0];
}

// If `n` is Mul/Div of `operand` by a scalar constant, folds the scalar into `scale` and returns
// the other operand. Mul is commutative; Div only divides.
std::optional<ValueId> StripScale(const Graph& g, const Node& n, Scale& scale) {
  if (n.inputs.size() != 2 || n.outputs.size() != 1) return std::nullopt;
  const bool mul = IsOp(n, "Mul"), div = IsOp(n, "Div");
  if (!mul && !div) return std::nullopt;
  for (int side : {1, 0}) {
    if (div && side == 0) break;
    const ValueId c = n.inputs[static_cast<size_t>(side)];
    const ValueId x = n.inputs[static_cast<size_t>(1 - side)];
    // ConstantScalar reads the dynamo exporter's folded Sqrt(scale) too: a one-element
    // initializer nothing trains (val_N, [1]; timm's ViT: 0.3535 = sqrt(1/8)).
    if (auto v = ConstantScalar(g, c)) {
      if (div && *v == 0.0) return std::nullopt;
      scale.factor = div ? scale.factor / *v : scale.factor * *v;
      return x;
    }
    if (IsConstantScalarTensor(g, c) && Rank(g, x) >= 3) {
      ValueId& slot = div ? scale.divisor : scale.multiplier;
      if (slot.valid()) {
        // torch.onnx's scaled_dot_product_attention (symbolic_opset14) multiplies q and k^T
        // each by sqrt(scale) for stability; their product is the scale itself.
        const std::optional<ValueId> root = SameSquareRoot(g, slot, c);
        if (!root) return std::nullopt;
        slot = *root;
        return x;
      }
      slot = c;
      return x;
    }
  }
  return std::nullopt;
}

// repeat_kv: x [B, Hkv, a, b] -> Unsqueeze(axis 2) -> Expand [B, Hkv, n, a, b] -> Reshape
// [B, Hkv*n, a, b]. Returns x and adds the three nodes to `nodes` when `w` is such a repeat.
std::optional<ValueId> StripRepeat(const Graph& g, ValueId w, std::set<size_t>& nodes) {
  const Node* reshape = Producer(g, w);
  if (reshape == nullptr || !IsOp(*reshape, "Reshape")) return std::nullopt;
  const Node* expand = Producer(g, reshape->inputs.at(0));
  if (expand == nullptr || !IsOp(*expand, "Expand")) return std::nullopt;
  const Node* unsqueeze = Producer(g, expand->inputs.at(0));
  if (unsqueeze == nullptr || !IsOp(*unsqueeze, "Unsqueeze")) return std::nullopt;
  const ValueId x = unsqueeze->inputs.at(0);
  const Value& xv = g.value(x);
  const Value& uv = g.value(unsqueeze->outputs.at(0));
  const Value& ev = g.value(expand->outputs.at(0));
  const Value& wv = g.value(w);
  if (Rank(g, x) != 4 || Rank(g, uv.id) != 5 || Rank(g, ev.id) != 5 || Rank(g, w) != 4)
    return std::nullopt;
  const auto& xd = xv.shape.dims;
  const auto& ud = uv.shape.dims;
  const auto& ed = ev.shape.dims;
  const auto& wd = wv.shape.dims;
  const bool unsqueezed_at_2 =
      ud[0] == xd[0] && ud[1] == xd[1] && ud[2] == Dim(1) && ud[3] == xd[2] && ud[4] == xd[3];
  const bool expanded = ed[0] == xd[0] && ed[1] == xd[1] && ed[3] == xd[2] && ed[4] == xd[3];
  const bool merged = wd[0] == xd[0] && wd[1] == xd[1] * ed[2] && wd[2] == xd[2] && wd[3] == xd[3];
  if (!unsqueezed_at_2 || !expanded || !merged) return std::nullopt;
  nodes.insert({reshape->id.index(), expand->id.index(), unsqueeze->id.index()});
  return x;
}

bool IsTransposeOfLastTwo(const Node& n) {
  return IsOp(n, "Transpose") && n.attributes.GetInts("perm") == std::vector<int64_t>{0, 1, 3, 2};
}

// Adds to `nodes` the shape arithmetic (Shape -> Slice -> Concat: nodes making constant values)
// behind `shapes` that only `nodes` read: the target shapes of Reshapes the fusion removes. A Shape
// node reads a tensor without keeping it, but that tensor must survive the rewrite, so the Shape
// goes with the pattern.
void AddShapeArithmetic(const Graph& g, const std::vector<ValueId>& shapes,
                        std::set<size_t>& nodes) {
  std::set<size_t> cone;
  std::vector<ValueId> stack = shapes;
  while (!stack.empty()) {
    const Node* p = Producer(g, stack.back());
    stack.pop_back();
    if (p == nullptr || !cone.insert(p->id.index()).second) continue;
    if (IsOp(*p, "Shape")) continue;  // reads metadata only: its input is not shape arithmetic
    for (ValueId in : p->inputs)
      if (in.valid() && g.value(in).kind == ValueKind::kConstant) stack.push_back(in);
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t n : cone) {
      if (nodes.count(n)) continue;
      bool only_inside = true;
      for (ValueId o : g.node(NodeId(n)).outputs) {
        if (!o.valid()) continue;
        const Value& v = g.value(o);
        only_inside = only_inside && v.kind == ValueKind::kConstant && !v.is_graph_output;
        for (NodeId c : v.consumers) only_inside = only_inside && nodes.count(c.index()) > 0;
      }
      if (!only_inside) continue;
      nodes.insert(n);
      changed = true;
    }
  }
}

// torch.onnx's dynamo decomposition of scaled_dot_product_attention (onnxscript's torchlib
// aten_scaled_dot_product_attention: "contract the dimensions that are not the last two so we can
// transpose with a static permutation") swaps the key's last two axes through 3D: Reshape [B*H, S,
// D] -> Transpose(0, 2, 1) -> Reshape [B, H, D, S]. Returns the 4D key [B, H, S, D] and adds the
// three nodes and their shape arithmetic to `nodes` when `key_t` is such a swap.
std::optional<ValueId> StripTransposeThrough3d(const Graph& g, ValueId key_t,
                                               std::set<size_t>& nodes) {
  const Node* back = Producer(g, key_t);
  if (back == nullptr || !IsOp(*back, "Reshape") || back->inputs.size() != 2) return std::nullopt;
  const Node* t = Producer(g, back->inputs[0]);
  if (t == nullptr || !IsOp(*t, "Transpose") ||
      t->attributes.GetInts("perm") != std::vector<int64_t>{0, 2, 1})
    return std::nullopt;
  const Node* flat = Producer(g, t->inputs.at(0));
  if (flat == nullptr || !IsOp(*flat, "Reshape") || flat->inputs.size() != 2) return std::nullopt;
  const ValueId key = flat->inputs[0];
  if (Rank(g, key) != 4 || Rank(g, key_t) != 4 || Rank(g, flat->outputs.at(0)) != 3 ||
      SoleConsumer(g, flat->outputs[0]) != t || SoleConsumer(g, t->outputs.at(0)) != back)
    return std::nullopt;
  const auto& k = g.value(key).shape.dims;
  const auto& f = g.value(flat->outputs[0]).shape.dims;
  const auto& kt = g.value(key_t).shape.dims;
  const bool flattened = f[0] == k[0] * k[1] && f[1] == k[2] && f[2] == k[3];
  if (!flattened || !(kt[0] == k[0] && kt[1] == k[1] && kt[2] == k[3] && kt[3] == k[2]))
    return std::nullopt;
  nodes.insert({back->id.index(), t->id.index(), flat->id.index()});
  AddShapeArithmetic(g, {back->inputs[1], flat->inputs[1]}, nodes);
  return key;
}

// torch.onnx's dynamo decomposition guards the probabilities against fully masked rows:
// Where(IsNaN(P), 0, P). Returns the guarded probabilities and adds the two nodes to `nodes`
// when `probs` is read by exactly that guard (SDPA's kernels write no NaN for such rows either).
std::optional<ValueId> StripNanGuard(const Graph& g, ValueId probs, std::set<size_t>& nodes) {
  const Value& pv = g.value(probs);
  if (pv.is_graph_output || pv.consumers.size() != 2) return std::nullopt;
  const Node* is_nan = nullptr;
  const Node* where = nullptr;
  for (NodeId c : pv.consumers) {
    const Node& n = g.node(c);
    if (IsOp(n, "IsNaN") && n.inputs.size() == 1) is_nan = &n;
    if (IsOp(n, "Where") && n.inputs.size() == 3) where = &n;
  }
  if (is_nan == nullptr || where == nullptr || SoleConsumer(g, is_nan->outputs.at(0)) != where ||
      where->inputs[0] != is_nan->outputs[0] || where->inputs[2] != probs ||
      ConstantScalar(g, where->inputs[1]) != std::optional<double>(0.0))
    return std::nullopt;
  nodes.insert({is_nan->id.index(), where->id.index()});
  return where->outputs.at(0);
}

std::string ScopeOf(const std::string& name) {
  const size_t slash = name.rfind('/');
  return slash == std::string::npos ? name : name.substr(0, slash);
}

// Every value a node of `nodes` makes, except `output`, is read only inside `nodes` and is not a
// graph output: otherwise the real program keeps it, and fusing would undercount.
bool SelfContained(const Graph& g, const std::set<size_t>& nodes, ValueId output) {
  for (size_t n : nodes) {
    for (ValueId o : g.node(NodeId(n)).outputs) {
      if (!o.valid() || o == output) continue;
      const Value& v = g.value(o);
      if (v.is_graph_output) return false;
      for (NodeId c : v.consumers)
        if (!nodes.count(c.index())) return false;
    }
  }
  return true;
}

bool SoftmaxOverLastAxis(const Graph& g, const Node& s) {
  const int rank = Rank(g, s.inputs.at(0));
  if (rank != 3 && rank != 4) return false;
  if (!s.attributes.Has("axis")) {
    auto it = g.opset_imports.find("");
    return it != g.opset_imports.end() && it->second >= 13;  // the default became -1 at 13
  }
  const int64_t axis = s.attributes.GetInt("axis", -1);
  return axis == -1 || axis == rank - 1;
}

// Whether `v` is computed, through floating values, from a parameter that is trained (a
// floating, unfrozen initializer). Shapes, indices and booleans carry no gradient, nor does
// CastLike's dtype operand (HF builds its masks from the embeddings' shape and dtype).
bool DependsOnTrainedParameter(const Graph& g, ValueId v) {
  std::vector<ValueId> stack{v};
  std::unordered_set<size_t> seen;
  while (!stack.empty()) {
    const ValueId u = stack.back();
    stack.pop_back();
    if (!u.valid() || !seen.insert(u.index()).second) continue;
    const Value& value = g.value(u);
    if (!IsFloating(value.dtype)) continue;
    if (value.kind == ValueKind::kParameter && value.trainable && !value.frozen) return true;
    const Node* producer = Producer(g, u);
    if (producer == nullptr) continue;
    const size_t data_inputs = IsOp(*producer, "CastLike") ? 1 : producer->inputs.size();
    for (size_t i = 0; i < data_inputs && i < producer->inputs.size(); ++i)
      stack.push_back(producer->inputs[i]);
  }
  return false;
}

// The additive terms of the scores an eager attention may have: a mask, and a position bias
// before it (HF's T5: scores + position_bias + mask).
constexpr int kMaxAdditiveTerms = 2;

// A tensor of zeros: ConstantOfShape with no value (ONNX's default 0) or a zero value, or a
// one-element constant 0. torch.zeros exports as the first.
bool IsZeroConstant(const Graph& g, ValueId u) {
  if (auto v = ConstantScalar(g, u)) return *v == 0.0;
  const Node* p = Producer(g, u);
  if (p == nullptr || !IsOp(*p, "ConstantOfShape")) return false;
  const TensorAttribute* t = p->attributes.GetTensor("value");
  if (t == nullptr) return true;
  for (double f : t->float_values)
    if (f != 0.0) return false;
  for (int64_t i : t->int_values)
    if (i != 0) return false;
  return !t->float_values.empty() || !t->int_values.empty();
}

// The eager pattern around Softmax node `s`.
std::optional<Match> MatchEager(const Graph& g, const Node& s) {
  if (!IsOp(s, "Softmax") || s.inputs.size() != 1 || s.outputs.size() != 1) return std::nullopt;
  if (!SoftmaxOverLastAxis(g, s)) return std::nullopt;
  Match m;
  m.removed.insert(s.id.index());
  FusedAttention& summary = m.summary;
  summary.mask = sdpa::kMaskNone;

  // Forward: [Cast to the same dtype]* -> [Dropout] -> MatMul(probs, v). HF's eager attention
  // writes softmax(..., dtype=float32).to(query.dtype): in an fp32 export, casts that change
  // nothing.
  ValueId probs = s.outputs[0];
  const Node* next = SoleConsumer(g, probs);
  while (next != nullptr && IsOp(*next, "Cast") && next->outputs.size() == 1 &&
         next->outputs[0].valid() && g.value(next->outputs[0]).dtype == g.value(probs).dtype) {
    m.removed.insert(next->id.index());
    probs = next->outputs[0];
    next = SoleConsumer(g, probs);
  }
  if (next == nullptr) {
    if (auto guarded = StripNanGuard(g, probs, m.removed)) {
      probs = *guarded;
      next = SoleConsumer(g, probs);
    }
  }
  double dropout_ratio = 0.0;
  if (next != nullptr && IsOp(*next, "Dropout")) {
    // Opset 12+ gives the ratio as input 1 (torch writes a Constant); before, as an attribute.
    if (next->inputs.size() > 1 && next->inputs[1].valid()) {
      auto ratio = ConstantScalar(g, next->inputs[1]);
      if (!ratio) return std::nullopt;  // a ratio computed at run time
      dropout_ratio = *ratio;
    } else {
      dropout_ratio = next->attributes.GetFloat("ratio", 0.5);
    }
    if (next->inputs.size() > 2 && next->inputs[2].valid()) {
      auto training = ConstantScalar(g, next->inputs[2]);
      if (!training) return std::nullopt;
      if (*training == 0.0) dropout_ratio = 0.0;
    }
    m.removed.insert(next->id.index());
    probs = next->outputs[0];
    next = SoleConsumer(g, probs);
  } else if (next != nullptr && IsOp(*next, "Identity") && next->inputs.size() == 1) {
    // A zero-ratio Dropout the import fusions (graph/fusion/zero_dropout.cc) already rewrote.
    m.removed.insert(next->id.index());
    probs = next->outputs[0];
    next = SoleConsumer(g, probs);
  }
  if (next == nullptr || !IsOp(*next, "MatMul") || next->inputs[0] != probs) return std::nullopt;
  const Node& pv = *next;
  m.removed.insert(pv.id.index());
  m.anchor = pv.id.index();
  ValueId v = pv.inputs[1];
  const ValueId out = pv.outputs[0];

  // Backward from the softmax input: [mask] <- [scale]* <- MatMul(q, k^T).
  Scale scale;
  ValueId cur = s.inputs[0];
  ValueId mask;
  double fill = -std::numeric_limits<double>::infinity();
  const Node* p = Producer(g, cur);
  // The operand of a mask node that leads to the scores MatMul (through scales, and through
  // the further additive terms of a chain of Adds).
  std::function<bool(ValueId, int)> leads_to_scores = [&](ValueId u, int adds) {
    Scale probe;
    for (const Node* q = Producer(g, u); q != nullptr; q = Producer(g, u)) {
      if (IsOp(*q, "MatMul")) return true;
      if (IsOp(*q, "Add") && q->inputs.size() == 2 && adds > 0)
        return leads_to_scores(q->inputs[0], adds - 1) || leads_to_scores(q->inputs[1], adds - 1);
      auto x = StripScale(g, *q, probe);
      if (!x) return false;
      u = *x;
    }
    return false;
  };
  if (p != nullptr && IsOp(*p, "Add") && p->inputs.size() == 2) {
    // The additive terms, outermost first: a mask, and HF's T5 writes its position bias as a
    // second Add before it (scores + position_bias + mask). A zero constant adds nothing (T5's
    // cross-attention bias is torch.zeros).
    std::vector<ValueId> terms;
    int adds = 0;
    while (p != nullptr && IsOp(*p, "Add") && p->inputs.size() == 2) {
      const int chain = leads_to_scores(p->inputs[0], kMaxAdditiveTerms)   ? 0
                        : leads_to_scores(p->inputs[1], kMaxAdditiveTerms) ? 1
                                                                           : -1;
      if (chain < 0 || ++adds > kMaxAdditiveTerms) return std::nullopt;
      const ValueId term = p->inputs[static_cast<size_t>(1 - chain)];
      // A learned score bias (T5's relative-position bias, Swin's and BEiT's tables) is trained
      // through the scores: the mask PyTorch's SDPA receives requires grad.
      if (DependsOnTrainedParameter(g, term)) summary.mask_requires_grad = true;
      if (!IsZeroConstant(g, term)) terms.push_back(term);
      m.removed.insert(p->id.index());
      cur = p->inputs[static_cast<size_t>(chain)];
      p = Producer(g, cur);
    }
    // The fused op reads one mask: two runtime terms are fused only where the match is kept as
    // written anyway (a mask that requires grad runs the math kernel, FuseAttention).
    if (terms.size() > 1 && !summary.mask_requires_grad) return std::nullopt;
    if (!terms.empty()) {
      mask = terms.back();  // the innermost (for a kept match only its existence matters)
      summary.mask = sdpa::kMaskAdd;
    }
    p = Producer(g, cur);
  } else if (p != nullptr && IsOp(*p, "Where") && p->inputs.size() == 3) {
    mask = p->inputs[0];
    if (leads_to_scores(p->inputs[1], 0) && ConstantScalar(g, p->inputs[2])) {
      cur = p->inputs[1];
      fill = *ConstantScalar(g, p->inputs[2]);
      summary.mask = sdpa::kMaskKeep;
    } else if (leads_to_scores(p->inputs[2], 0) && ConstantScalar(g, p->inputs[1])) {
      cur = p->inputs[2];
      fill = *ConstantScalar(g, p->inputs[1]);
      summary.mask = sdpa::kMaskFillWhere;
    } else {
      return std::nullopt;
    }
    m.removed.insert(p->id.index());
  }
  for (p = Producer(g, cur); p != nullptr && !IsOp(*p, "MatMul"); p = Producer(g, cur)) {
    auto x = StripScale(g, *p, scale);
    if (!x) return std::nullopt;
    m.removed.insert(p->id.index());
    cur = *x;
  }
  if (p == nullptr) return std::nullopt;
  const Node& qk = *p;
  m.removed.insert(qk.id.index());
  ValueId operands[2] = {qk.inputs[0], qk.inputs[1]};
  for (ValueId& u : operands) {
    const Node* q = Producer(g, u);
    if (q == nullptr || SoleConsumer(g, u) != &qk) continue;
    if (auto x = StripScale(g, *q, scale)) {
      m.removed.insert(q->id.index());
      u = *x;
    }
  }
  ValueId query = operands[0];
  ValueId key = operands[1];
  const int rank = Rank(g, query);
  if ((rank != 3 && rank != 4) || Rank(g, key) != rank || Rank(g, v) != rank) return std::nullopt;
  if (!IsFloating(g.value(query).dtype)) return std::nullopt;

  // Grouped-query attention: read K and V before repeat_kv.
  bool key_transposed = true;
  if (rank == 4) {
    const Node* t = Producer(g, key);
    if (t != nullptr && IsTransposeOfLastTwo(*t)) {
      std::set<size_t> repeat;
      if (auto x = StripRepeat(g, t->inputs[0], repeat)) {
        m.removed.insert(repeat.begin(), repeat.end());
        m.removed.insert(t->id.index());
        key = *x;
        key_transposed = false;
        summary.grouped_query = true;
      }
    } else if (std::set<size_t> swap; auto k = StripTransposeThrough3d(g, key, swap)) {
      // The exporter's own swap of the key's axes: SDPA reads the key itself, repeated or not.
      m.removed.insert(swap.begin(), swap.end());
      key = *k;
      key_transposed = false;
      std::set<size_t> repeat;
      if (auto x = StripRepeat(g, key, repeat)) {
        m.removed.insert(repeat.begin(), repeat.end());
        key = *x;
        summary.grouped_query = true;
      }
    } else {
      std::set<size_t> repeat;
      if (auto x = StripRepeat(g, key, repeat)) {
        m.removed.insert(repeat.begin(), repeat.end());
        key = *x;
        summary.grouped_query = true;
      }
    }
    std::set<size_t> repeat;
    if (auto x = StripRepeat(g, v, repeat)) {
      m.removed.insert(repeat.begin(), repeat.end());
      v = *x;
      summary.grouped_query = true;
    }
  }
  if (!SelfContained(g, m.removed, out)) return std::nullopt;

  Node& f = m.fused;
  f.op_type = sdpa::kOpType;
  f.domain = sdpa::kDomain;
  f.inputs = {query, key, v};
  if (mask.valid() || scale.multiplier.valid() || scale.divisor.valid()) f.inputs.push_back(mask);
  if (scale.multiplier.valid() || scale.divisor.valid()) f.inputs.push_back(scale.multiplier);
  if (scale.divisor.valid()) f.inputs.push_back(scale.divisor);
  f.outputs = {out};
  f.attributes.Set(sdpa::kScale, scale.factor);
  f.attributes.Set(sdpa::kKeyTransposed, int64_t{key_transposed ? 1 : 0});
  f.attributes.Set(sdpa::kMaskMode, summary.mask);
  f.attributes.Set(sdpa::kMaskFill, fill);
  f.attributes.Set(sdpa::kDropoutRatio, dropout_ratio);
  summary.dropout = dropout_ratio > 0.0;
  f.name = ScopeOf(s.name);
  return m;
}

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

// Removes nodes whose every output is a constant nobody reads any more (the scale Constants, the
// shape sub-graphs of repeat_kv): iterated, since removing one can orphan its inputs' producers.
void RemoveDeadConstants(const Graph& g, std::set<size_t>& removed,
                         const std::vector<Node>& fused_nodes) {
  std::vector<int> readers(g.num_values(), 0);
  auto count = [&](const Node& n, int delta) {
    for (ValueId in : n.inputs)
      if (in.valid()) readers[in.index()] += delta;
  };
  for (const Node& n : g.nodes())
    if (!removed.count(n.id.index())) count(n, +1);
  for (const Node& n : fused_nodes) count(n, +1);
  for (bool changed = true; changed;) {
    changed = false;
    for (const Node& n : g.nodes()) {
      if (removed.count(n.id.index()) || n.outputs.empty()) continue;
      bool dead = true;
      for (ValueId o : n.outputs) {
        if (!o.valid()) continue;
        const Value& v = g.value(o);
        dead =
            dead && v.kind == ValueKind::kConstant && !v.is_graph_output && readers[o.index()] == 0;
      }
      if (!dead) continue;
      removed.insert(n.id.index());
      count(n, -1);
      changed = true;
    }
  }
}

Graph Rebuild(const Graph& g, const std::set<size_t>& removed,
              const std::map<size_t, const Node*>& fused_at) {
  Graph out;
  CopyModelFacts(g, out);
  for (const auto& [anchor, f] : fused_at)
    if (f->domain == sdpa::kDomain) out.opset_imports[sdpa::kDomain] = 1;

  // Values made by removed nodes go (the fused node makes its output again).
  std::set<size_t> fused_outputs;
  for (const auto& [anchor, f] : fused_at)
    for (ValueId o : f->outputs) fused_outputs.insert(o.index());
  std::vector<ValueId> new_id(g.num_values());
  for (const Value& v : g.values()) {
    const bool made_by_removed = v.producer.valid() && removed.count(v.producer.index());
    if (made_by_removed && !fused_outputs.count(v.id.index())) continue;
    Value copy = v;
    copy.producer = NodeId();
    copy.consumers.clear();
    copy.is_graph_output = false;
    new_id[v.id.index()] = out.AddValue(std::move(copy));
  }
  auto remap = [&](std::vector<ValueId>& ids) {
    for (ValueId& u : ids)
      if (u.valid()) u = new_id[u.index()];
  };
  for (ValueId in : g.inputs()) out.MarkInput(new_id[in.index()]);
  for (const Node& n : g.nodes()) {
    if (auto it = fused_at.find(n.id.index()); it != fused_at.end()) {
      Node f = *it->second;
      remap(f.inputs);
      remap(f.outputs);
      out.AddNode(std::move(f));
      continue;
    }
    if (removed.count(n.id.index())) continue;
    Node copy = n;
    remap(copy.inputs);
    remap(copy.outputs);
    out.AddNode(std::move(copy));
  }
  for (ValueId o : g.outputs()) out.MarkOutput(new_id[o.index()]);
  return out;
}

}  // namespace

Graph StripSoftmaxNanGuards(Graph graph, size_t* stripped) {
  std::set<size_t> removed;
  std::vector<Node> identities;
  std::vector<size_t> anchors;
  for (const Node& s : graph.nodes()) {
    if (!IsOp(s, "Softmax") || s.outputs.empty() || !SoftmaxOverLastAxis(graph, s)) continue;
    std::set<size_t> guard;
    const std::optional<ValueId> guarded = StripNanGuard(graph, s.outputs[0], guard);
    if (!guarded) continue;
    const Node& where = graph.node(graph.value(*guarded).producer);
    Node identity;
    identity.op_type = "Identity";
    identity.name = where.name;
    identity.inputs = {s.outputs[0]};
    identity.outputs = {*guarded};
    removed.insert(guard.begin(), guard.end());
    identities.push_back(std::move(identity));
    anchors.push_back(where.id.index());
  }
  if (stripped != nullptr) *stripped = identities.size();
  if (identities.empty()) return graph;
  std::map<size_t, const Node*> at;
  for (size_t i = 0; i < identities.size(); ++i) at[anchors[i]] = &identities[i];
  // The guards' fill constants, read by nothing else, go with them.
  RemoveDeadConstants(graph, removed, identities);
  return Rebuild(graph, removed, at);
}

AttentionFusion FuseAttention(Graph graph, const KeepEager& keep_eager) {
  std::vector<Match> matches;
  std::set<size_t> claimed;
  AttentionFusion result;
  for (const Node& n : graph.nodes()) {
    std::optional<Match> m = MatchEager(graph, n);
    if (!m) m = MatchOnnxAttention(graph, n);
    if (!m) m = MatchOrtMultiHeadAttention(graph, n);
    if (!m) continue;
    bool overlaps = false;
    for (size_t r : m->removed) overlaps = overlaps || claimed.count(r) > 0;
    if (overlaps) continue;
    claimed.insert(m->removed.begin(), m->removed.end());
    // The fused op gives its mask no gradient, and PyTorch's SDPA runs its math kernel for a
    // mask that requires grad (docs/attention.md): kept as written.
    if (m->summary.mask_requires_grad || (keep_eager && keep_eager(m->summary))) {
      m->summary.node = n.name;  // the pattern's softmax (or Attention node), as written
      for (size_t r : m->removed) m->summary.replaced.push_back(graph.node(NodeId(r)).name);
      result.kept_eager.push_back(std::move(m->summary));
      continue;
    }
    matches.push_back(std::move(*m));
  }
  if (matches.empty()) {
    result.graph = std::move(graph);
    return result;
  }
  // What the rewrite removes: the fused patterns' nodes (not those kept eager).
  claimed.clear();
  for (const Match& m : matches) claimed.insert(m.removed.begin(), m.removed.end());
  std::set<std::string> names;
  for (const Node& n : graph.nodes())
    if (!claimed.count(n.id.index())) names.insert(n.name);
  std::vector<Node> fused_nodes;
  for (Match& m : matches) {
    const std::string scope = m.fused.name;
    std::string name = scope + "/" + sdpa::kOpType;
    for (int k = 1; names.count(name); ++k)
      name = scope + "/" + sdpa::kOpType + "_" + std::to_string(k);
    names.insert(name);
    m.fused.name = name;
    m.summary.node = name;
    for (size_t r : m.removed) m.summary.replaced.push_back(graph.node(NodeId(r)).name);
    fused_nodes.push_back(m.fused);
  }
  RemoveDeadConstants(graph, claimed, fused_nodes);
  std::map<size_t, const Node*> fused_at;
  for (size_t i = 0; i < matches.size(); ++i) fused_at[matches[i].anchor] = &fused_nodes[i];
  result.graph = Rebuild(graph, claimed, fused_at);
  for (Match& m : matches) result.fused.push_back(std::move(m.summary));
  return result;
}

}  // namespace memplan
