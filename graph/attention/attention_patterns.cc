#include "graph/attention/attention_patterns.h"

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

namespace memplan::attention {

bool IsOp(const Node& n, const char* op) { return n.op_type == op && n.domain.empty(); }

const Node* Producer(const Graph& g, ValueId u) {
  if (!u.valid()) return nullptr;
  const Value& v = g.value(u);
  return v.producer.valid() ? &g.node(v.producer) : nullptr;
}

const Node* SoleConsumer(const Graph& g, ValueId u) {
  const Value& v = g.value(u);
  if (v.is_graph_output || v.consumers.size() != 1) return nullptr;
  return &g.node(v.consumers[0]);
}

int Rank(const Graph& g, ValueId u) {
  const Value& v = g.value(u);
  return v.shape.known ? static_cast<int>(v.shape.rank()) : -1;
}

bool IsFixed(const Graph& g, const Value& v, int depth) {
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

bool IsConstantScalarTensor(const Graph& g, ValueId u) {
  const Value& v = g.value(u);
  if (!IsFixed(g, v) || !IsFloating(v.dtype) || !v.shape.known) return false;
  return v.shape.NumElements().constant_value() == 1;
}

std::optional<ValueId> SameSquareRoot(const Graph& g, ValueId a, ValueId b) {
  const Node* ra = Producer(g, a);
  const Node* rb = Producer(g, b);
  if (ra == nullptr || rb == nullptr || !IsOp(*ra, "Sqrt") || !IsOp(*rb, "Sqrt") ||
      ra->inputs.size() != 1 || rb->inputs.size() != 1 || ra->inputs[0] != rb->inputs[0] ||
      !IsConstantScalarTensor(g, ra->inputs[0]))
    return std::nullopt;
  return ra->inputs[0];
}

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

}  // namespace memplan::attention
