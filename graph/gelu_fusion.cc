#include "graph/gelu_fusion.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace memplan {
namespace {

constexpr const char* kContribDomain = "com.microsoft";

// The single float a one-element float32 tensor holds, if that is what it is.
std::optional<float> ScalarOf(const onnx::TensorProto& t) {
  if (t.data_type() != onnx::TensorProto::FLOAT) return std::nullopt;
  // One element means every dim is 1 (a product could overflow on a hostile file).
  for (int64_t d : t.dims())
    if (d != 1) return std::nullopt;
  if (t.float_data_size() == 1) return t.float_data(0);
  if (t.raw_data().size() == sizeof(float)) {
    float v;
    std::memcpy(&v, t.raw_data().data(), sizeof v);
    return v;
  }
  return std::nullopt;
}

bool Near(std::optional<float> v, double expected) {
  return v && std::fabs(*v - expected) <= 1e-5 * std::fabs(expected);
}

// Who produces and who consumes each value name, and which values hold a scalar constant.
class Uses {
 public:
  explicit Uses(const onnx::GraphProto& g) {
    for (const auto& t : g.initializer())
      if (auto v = ScalarOf(t)) scalars_[t.name()] = *v;
    for (int i = 0; i < g.node_size(); ++i) {
      const auto& n = g.node(i);
      for (const auto& out : n.output()) producer_[out] = i;
      for (const auto& in : n.input()) consumers_[in].push_back(i);
      if (n.op_type() == "Constant" && n.domain().empty() && n.output_size() == 1) {
        for (const auto& a : n.attribute()) {
          std::optional<float> v;
          if (a.name() == "value" && a.has_t()) v = ScalarOf(a.t());
          if (a.name() == "value_float") v = a.f();
          if (v) scalars_[n.output(0)] = *v;
        }
      }
    }
    for (const auto& o : g.output()) graph_outputs_.insert(o.name());
  }

  std::optional<float> Scalar(const std::string& name) const {
    auto it = scalars_.find(name);
    return it == scalars_.end() ? std::nullopt : std::optional<float>(it->second);
  }
  std::optional<int> Producer(const std::string& name) const {
    auto it = producer_.find(name);
    return it == producer_.end() ? std::nullopt : std::optional<int>(it->second);
  }
  // The one node reading `name`, when exactly one does and it is not a graph output.
  std::optional<int> SoleConsumer(const std::string& name) const {
    auto it = consumers_.find(name);
    if (it == consumers_.end() || it->second.size() != 1 || graph_outputs_.count(name))
      return std::nullopt;
    return it->second[0];
  }
  const std::vector<int>& Consumers(const std::string& name) const {
    static const std::vector<int> kNone;
    auto it = consumers_.find(name);
    return it == consumers_.end() ? kNone : it->second;
  }

 private:
  std::unordered_map<std::string, float> scalars_;
  std::unordered_map<std::string, int> producer_;
  std::unordered_map<std::string, std::vector<int>> consumers_;
  std::unordered_set<std::string> graph_outputs_;
};

bool Is(const onnx::NodeProto& n, const char* op) {
  return n.op_type() == op && n.domain().empty() && n.input_size() == 2 && n.output_size() == 1;
}

// For a binary node, the operand that is not the scalar `value` (nullopt when neither operand is).
std::optional<std::string> OtherThanScalar(const onnx::NodeProto& n, const Uses& uses,
                                           double value, bool commutative) {
  if (Near(uses.Scalar(n.input(1)), value)) return n.input(0);
  if (commutative && Near(uses.Scalar(n.input(0)), value)) return n.input(1);
  return std::nullopt;
}

// For Mul(a, b), the operand that is not `known`.
std::optional<std::string> OtherOperand(const onnx::NodeProto& n, const std::string& known) {
  if (n.input(0) == known) return n.input(1);
  if (n.input(1) == known) return n.input(0);
  return std::nullopt;
}

struct Match {
  std::string x;       // the GELU input
  std::string y;       // the GELU output
  std::vector<int> nodes;  // the pattern's nodes, to remove
  int last = -1;           // the node producing y: the fused node takes its place
  std::string scope;       // name prefix for the fused node
};

// Tries the pattern whose Erf node is `erf`.
std::optional<Match> MatchAt(const onnx::GraphProto& g, const Uses& uses, int erf) {
  const auto& e = g.node(erf);
  if (e.op_type() != "Erf" || !e.domain().empty() || e.input_size() != 1 || e.output_size() != 1)
    return std::nullopt;
  // x / sqrt(2) or x * (1 / sqrt(2)), feeding only the Erf.
  auto scale_node = uses.Producer(e.input(0));
  if (!scale_node || !uses.SoleConsumer(e.input(0))) return std::nullopt;
  const auto& s = g.node(*scale_node);
  std::optional<std::string> x;
  if (Is(s, "Div")) x = OtherThanScalar(s, uses, std::sqrt(2.0), /*commutative=*/false);
  if (Is(s, "Mul")) x = OtherThanScalar(s, uses, 1.0 / std::sqrt(2.0), /*commutative=*/true);
  if (!x) return std::nullopt;
  // 1 + erf.
  auto add = uses.SoleConsumer(e.output(0));
  if (!add || !Is(g.node(*add), "Add") ||
      OtherThanScalar(g.node(*add), uses, 1.0, true) != e.output(0))
    return std::nullopt;
  const std::string& one_plus = g.node(*add).output(0);
  auto times = uses.SoleConsumer(one_plus);
  if (!times || !Is(g.node(*times), "Mul")) return std::nullopt;
  const auto other = OtherOperand(g.node(*times), one_plus);
  if (!other) return std::nullopt;

  Match m;
  m.x = *x;
  m.nodes = {*scale_node, erf, *add, *times};
  if (*other == *x) {
    // (x * (1 + erf)) * 0.5
    const std::string& product = g.node(*times).output(0);
    auto half = uses.SoleConsumer(product);
    if (!half || !Is(g.node(*half), "Mul") ||
        OtherThanScalar(g.node(*half), uses, 0.5, true) != product)
      return std::nullopt;
    m.nodes.push_back(*half);
    m.last = *half;
  } else {
    // (x * 0.5) * (1 + erf): the half product must be x*0.5 and feed only this Mul.
    auto half = uses.Producer(*other);
    if (!half || !uses.SoleConsumer(*other) || !Is(g.node(*half), "Mul") ||
        OtherThanScalar(g.node(*half), uses, 0.5, true) != *x)
      return std::nullopt;
    m.nodes.push_back(*half);
    m.last = *times;
  }
  m.y = g.node(m.last).output(0);
  const std::string& name = e.name();
  const size_t slash = name.rfind('/');
  m.scope = slash == std::string::npos ? name : name.substr(0, slash);
  return m;
}

}  // namespace

int FuseErfGelu(onnx::ModelProto& model) {
  onnx::GraphProto& g = *model.mutable_graph();
  const Uses uses(g);
  std::vector<Match> matches;
  std::unordered_set<int> claimed;
  for (int i = 0; i < g.node_size(); ++i) {
    auto m = MatchAt(g, uses, i);
    if (!m) continue;
    bool overlaps = false;
    for (int n : m->nodes) overlaps |= claimed.count(n) > 0;
    if (overlaps) continue;
    claimed.insert(m->nodes.begin(), m->nodes.end());
    matches.push_back(std::move(*m));
  }
  if (matches.empty()) return 0;

  std::unordered_set<std::string> names;
  for (const auto& n : g.node()) names.insert(n.name());
  std::unordered_map<int, const Match*> fused_at;
  for (const auto& m : matches) fused_at[m.last] = &m;

  // Constant nodes whose every reader is being removed go too.
  std::unordered_set<int> removed = claimed;
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    if (n.op_type() != "Constant" || n.output_size() != 1) continue;
    const auto& readers = uses.Consumers(n.output(0));
    bool all_removed = !readers.empty();
    for (int r : readers) all_removed &= claimed.count(r) > 0;
    if (all_removed) removed.insert(i);
  }

  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  for (int i = 0; i < g.node_size(); ++i) {
    if (auto it = fused_at.find(i); it != fused_at.end()) {
      const Match& m = *it->second;
      onnx::NodeProto* gelu = kept.Add();
      gelu->set_op_type("Gelu");
      gelu->set_domain(kContribDomain);
      std::string name = m.scope + "/Gelu";
      for (int k = 1; names.count(name); ++k) name = m.scope + "/Gelu_" + std::to_string(k);
      names.insert(name);
      gelu->set_name(name);
      gelu->add_input(m.x);
      gelu->add_output(m.y);
      continue;
    }
    if (!removed.count(i)) kept.Add()->Swap(g.mutable_node(i));
  }
  g.mutable_node()->Swap(&kept);

  bool has_contrib = false;
  for (const auto& op : model.opset_import()) has_contrib |= op.domain() == kContribDomain;
  if (!has_contrib) {
    auto* op = model.add_opset_import();
    op->set_domain(kContribDomain);
    op->set_version(1);
  }
  return static_cast<int>(matches.size());
}

}  // namespace memplan
