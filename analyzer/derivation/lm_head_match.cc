#include "analyzer/derivation/lm_head_match.h"

#include <vector>

namespace memplan {
namespace {

const Node* Producer(const Graph& g, ValueId v) {
  if (!v.valid()) return nullptr;
  const NodeId p = g.value(v).producer;
  return p.valid() ? &g.node(p) : nullptr;
}

// Read only by one node and not a graph output: the real program would not keep it otherwise.
bool Private(const Graph& g, ValueId v) {
  const Value& value = g.value(v);
  return value.consumers.size() == 1 && !value.is_graph_output;
}

bool IsAiOnnx(const Node& n, const char* op_type) {
  return n.domain.empty() && n.op_type == op_type;
}

// A trainable 2-D or 1-D parameter with constant dims.
bool IsParameterOfRank(const Graph& g, ValueId v, size_t rank) {
  if (!v.valid()) return false;
  const Value& value = g.value(v);
  return value.kind == ValueKind::kParameter && value.shape.known && value.shape.rank() == rank &&
         value.shape.IsFullyConstant();
}

int64_t ConstantDim(const Graph& g, ValueId v, size_t axis) {
  return *g.value(v).shape.dims[axis].constant_value();
}

// MatMul(h, W) or MatMul(h, Transpose(W)).
std::optional<LmHeadMatch> MatchMatMul(const Graph& g, const Node& mm) {
  if (!IsAiOnnx(mm, "MatMul") || mm.inputs.size() != 2) return std::nullopt;
  LmHeadMatch m;
  m.nodes.insert(mm.id.index());
  m.anchor = mm.id.index();
  m.input = mm.inputs[0];
  const ValueId b = mm.inputs[1];
  m.projected = b;
  if (IsParameterOfRank(g, b, 2)) {
    m.weight = b;
    m.head = "MatMul";
    return m;
  }
  const Node* t = Producer(g, b);
  if (t == nullptr || !IsAiOnnx(*t, "Transpose") || t->inputs.size() != 1 ||
      !IsParameterOfRank(g, t->inputs[0], 2))
    return std::nullopt;
  const std::vector<int64_t> perm = t->attributes.GetInts("perm", {1, 0});
  if (perm != std::vector<int64_t>{1, 0}) return std::nullopt;
  m.transpose = t->id.index();
  // A Transpose read elsewhere stays whatever the rewrite does.
  if (Private(g, b)) m.nodes.insert(t->id.index());
  m.weight = t->inputs[0];
  m.transposed = true;
  m.head = "MatMul(Transpose)";
  return m;
}

// Gemm(h, W, b?) with transB = 1, as torch.onnx writes nn.Linear on a 2-D input.
std::optional<LmHeadMatch> MatchGemm(const Graph& g, const Node& gemm) {
  if (!IsAiOnnx(gemm, "Gemm") || gemm.inputs.size() < 2) return std::nullopt;
  const Attributes& a = gemm.attributes;
  if (a.GetInt("transA", 0) != 0 || a.GetInt("transB", 0) != 1 || a.GetFloat("alpha", 1.0) != 1.0 ||
      a.GetFloat("beta", 1.0) != 1.0 || !IsParameterOfRank(g, gemm.inputs[1], 2))
    return std::nullopt;
  LmHeadMatch m;
  m.nodes.insert(gemm.id.index());
  m.anchor = gemm.id.index();
  m.input = gemm.inputs[0];
  m.weight = gemm.inputs[1];
  m.projected = gemm.inputs[1];
  m.transposed = true;
  m.head = "Gemm";
  if (gemm.inputs.size() > 2 && gemm.inputs[2].valid()) {
    if (!IsParameterOfRank(g, gemm.inputs[2], 1)) return std::nullopt;
    m.bias = gemm.inputs[2];
  }
  return m;
}

}  // namespace

std::optional<LmHeadMatch> MatchLmHead(const Graph& g, ValueId logits) {
  const Node* p = Producer(g, logits);
  if (p == nullptr) return std::nullopt;
  std::optional<LmHeadMatch> m;
  if (IsAiOnnx(*p, "Add") && p->inputs.size() == 2) {
    // nn.Linear with bias on [B, S, H]: MatMul then Add(bias), in either operand order.
    for (size_t k = 0; k < 2 && !m; ++k) {
      const ValueId product = p->inputs[k];
      const ValueId bias = p->inputs[1 - k];
      const Node* mm = Producer(g, product);
      if (mm == nullptr || !IsParameterOfRank(g, bias, 1) || !Private(g, product)) continue;
      m = MatchMatMul(g, *mm);
      if (m) {
        m->bias = bias;
        m->nodes.insert(p->id.index());
        m->anchor = p->id.index();
        m->head = m->head + "+Add";
      }
    }
  } else if (IsAiOnnx(*p, "MatMul")) {
    m = MatchMatMul(g, *p);
  } else if (IsAiOnnx(*p, "Gemm")) {
    m = MatchGemm(g, *p);
  }
  if (!m) return std::nullopt;
  // Shapes: h [..., H], W [H, V] or [V, H], bias [V], logits [..., V].
  const Value& h = g.value(m->input);
  const Value& out = g.value(logits);
  if (!h.shape.known || h.shape.rank() != out.shape.rank() || h.shape.rank() < 2)
    return std::nullopt;
  m->hidden = ConstantDim(g, m->weight, m->transposed ? 1 : 0);
  m->vocab = ConstantDim(g, m->weight, m->transposed ? 0 : 1);
  if (h.shape.dims.back().constant_value() != m->hidden ||
      out.shape.dims.back().constant_value() != m->vocab)
    return std::nullopt;
  if (m->bias.valid() && ConstantDim(g, m->bias, 0) != m->vocab) return std::nullopt;
  return m;
}

std::string FreshName(const Graph& g, const std::string& base) {
  std::string name = base;
  for (int k = 1; g.FindValue(name) || g.FindNode(name); ++k) name = base + "_" + std::to_string(k);
  return name;
}

}  // namespace memplan
