#include "analyzer/derivation/fused_loss_plan.h"

#include <filesystem>
#include <set>
#include <utility>

#include "analyzer/program/loss_spec.h"
#include "analyzer/text/json_fields.h"
#include "graph/model_facts.h"
#include "graph/ops/fused_loss_op.h"

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

struct HeadMatch {
  std::set<size_t> removed;  // node indices replaced by the fused node
  ValueId input, weight, bias;
  bool transposed = false;  // weight is [V, H]
  std::string head;
  size_t anchor = 0;  // the node the fused node takes the place of (the logits' producer)
};

// MatMul(h, W) or MatMul(h, Transpose(W)) making `out`.
std::optional<HeadMatch> MatchMatMul(const Graph& g, const Node& mm) {
  if (!IsAiOnnx(mm, "MatMul") || mm.inputs.size() != 2) return std::nullopt;
  HeadMatch m;
  m.removed.insert(mm.id.index());
  m.anchor = mm.id.index();
  m.input = mm.inputs[0];
  const ValueId b = mm.inputs[1];
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
  // A Transpose read elsewhere stays; the fused node reads the weight itself either way.
  if (Private(g, b)) m.removed.insert(t->id.index());
  m.weight = t->inputs[0];
  m.transposed = true;
  m.head = "MatMul(Transpose)";
  return m;
}

// Gemm(h, W, b?) with transB = 1, as torch.onnx writes nn.Linear on a 2-D input.
std::optional<HeadMatch> MatchGemm(const Graph& g, const Node& gemm) {
  if (!IsAiOnnx(gemm, "Gemm") || gemm.inputs.size() < 2) return std::nullopt;
  const Attributes& a = gemm.attributes;
  if (a.GetInt("transA", 0) != 0 || a.GetInt("transB", 0) != 1 || a.GetFloat("alpha", 1.0) != 1.0 ||
      a.GetFloat("beta", 1.0) != 1.0 || !IsParameterOfRank(g, gemm.inputs[1], 2))
    return std::nullopt;
  HeadMatch m;
  m.removed.insert(gemm.id.index());
  m.anchor = gemm.id.index();
  m.input = gemm.inputs[0];
  m.weight = gemm.inputs[1];
  m.transposed = true;
  m.head = "Gemm";
  if (gemm.inputs.size() > 2 && gemm.inputs[2].valid()) {
    if (!IsParameterOfRank(g, gemm.inputs[2], 1)) return std::nullopt;
    m.bias = gemm.inputs[2];
  }
  return m;
}

// The head that makes `logits`, or nullopt.
std::optional<HeadMatch> MatchHead(const Graph& g, ValueId logits) {
  const Node* p = Producer(g, logits);
  if (p == nullptr) return std::nullopt;
  std::optional<HeadMatch> m;
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
        m->removed.insert(p->id.index());
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
  const int64_t hidden = ConstantDim(g, m->weight, m->transposed ? 1 : 0);
  const int64_t vocab = ConstantDim(g, m->weight, m->transposed ? 0 : 1);
  if (h.shape.dims.back().constant_value() != hidden ||
      out.shape.dims.back().constant_value() != vocab)
    return std::nullopt;
  if (m->bias.valid() && ConstantDim(g, m->bias, 0) != vocab) return std::nullopt;
  return m;
}

// A name no value or node of `g` has.
std::string FreshName(const Graph& g, const std::string& base) {
  std::string name = base;
  for (int k = 1; g.FindValue(name) || g.FindNode(name); ++k) name = base + "_" + std::to_string(k);
  return name;
}

// `g` without the matched head, with the labels input and the fused node in its place, its loss
// the graph output that was the logits.
Graph Rebuild(const Graph& g, const HeadMatch& m, ValueId logits, const Shape& label_shape,
              const std::string& node_name, int64_t tile_rows_per_sample) {
  Graph out;
  CopyModelFacts(g, out);
  out.opset_imports[fused_loss::kDomain] = 1;

  std::vector<ValueId> new_id(g.num_values());
  for (const Value& v : g.values()) {
    const bool made_by_removed = v.producer.valid() && m.removed.count(v.producer.index());
    if (made_by_removed) continue;
    Value copy = v;
    copy.producer = NodeId();
    copy.consumers.clear();
    copy.is_graph_output = false;
    new_id[v.id.index()] = out.AddValue(std::move(copy));
  }
  Value labels;
  labels.name = FreshName(g, "labels");
  labels.dtype = DType::kInt64;
  labels.shape = label_shape;
  labels.kind = ValueKind::kInput;
  const ValueId labels_id = out.AddValue(std::move(labels));
  Value loss;
  loss.name = FreshName(g, "loss");
  loss.dtype = DType::kFloat32;
  loss.shape = Shape{};
  loss.kind = ValueKind::kIntermediate;
  const ValueId loss_id = out.AddValue(std::move(loss));

  for (ValueId in : g.inputs()) out.MarkInput(new_id[in.index()]);
  out.MarkInput(labels_id);
  auto remap = [&](std::vector<ValueId>& ids) {
    for (ValueId& u : ids)
      if (u.valid()) u = new_id[u.index()];
  };
  for (const Node& n : g.nodes()) {
    if (n.id.index() == m.anchor) {
      Node f;
      f.name = node_name;
      f.op_type = fused_loss::kOpType;
      f.domain = fused_loss::kDomain;
      f.inputs = {new_id[m.input.index()], new_id[m.weight.index()], labels_id};
      if (m.bias.valid()) f.inputs.push_back(new_id[m.bias.index()]);
      f.outputs = {loss_id};
      f.attributes.Set(fused_loss::kTransposedWeight, int64_t{m.transposed ? 1 : 0});
      if (tile_rows_per_sample > 0)
        f.attributes.Set(fused_loss::kTileRowsPerSample, tile_rows_per_sample);
      out.AddNode(std::move(f));
      continue;
    }
    if (m.removed.count(n.id.index())) continue;
    Node copy = n;
    remap(copy.inputs);
    remap(copy.outputs);
    out.AddNode(std::move(copy));
  }
  for (ValueId o : g.outputs()) out.MarkOutput(o == logits ? loss_id : new_id[o.index()]);
  return out;
}

std::string FileName(const std::string& model) {
  return std::filesystem::path(model).filename().string();
}

}  // namespace

std::optional<int64_t> FusedLossPlan::ChunkRowsAt(const Bindings& bindings) const {
  if (!fused()) return std::nullopt;
  Expected<int64_t> bt = rows.Evaluate(bindings);
  if (!bt.ok() || *bt < 1) return std::nullopt;
  return fused_loss::ChunkRows(*bt, hidden, vocab);
}

Expected<FusedLossPlan> ApplyFusedLoss(Graph& graph, bool requested, LossKind loss,
                                       const Bindings& dims, const std::string& model) {
  FusedLossPlan plan;
  plan.requested = requested;
  if (!requested) return plan;
  const std::string prefix = "--fused-loss: ";
  if (graph.outputs().empty()) return MakeError(prefix + "the graph has no output");
  const ValueId logits = graph.outputs().front();
  const Value& out = graph.value(logits);
  Expected<LossSpec> resolved = ResolveLoss(loss, "", "", out.dtype, out.shape, out.name);
  if (!resolved.ok()) return MakeError(prefix + resolved.error().message);
  const LossSpec& spec = *resolved;
  if (spec.kind != LossKind::kCrossEntropy)
    return MakeError(prefix + "fuses an LM head with cross entropy, but the loss of model '" +
                     FileName(model) + "' output '" + out.name + "' is " +
                     std::string(LossKindName(spec.kind)) +
                     "; use --loss cross_entropy or drop --fused-loss");
  if (out.shape.rank() != 2 && out.shape.rank() != 3)
    return MakeError(prefix + "output '" + out.name + "' of model '" + FileName(model) +
                     "' is not [batch, classes] or [batch, seq, vocab] logits (rank " +
                     std::to_string(out.shape.rank()) + ")");
  if (!out.consumers.empty())
    return MakeError(prefix + "output '" + out.name + "' of model '" + FileName(model) +
                     "' is also read by node '" + graph.node(out.consumers.front()).name +
                     "', so the logits are materialised anyway");
  std::optional<HeadMatch> m = MatchHead(graph, logits);
  if (!m)
    return MakeError(prefix + "no LM head feeds the loss of model '" + FileName(model) +
                     "': output '" + out.name +
                     "' is not made by MatMul(h, W), MatMul(h, Transpose(W)), MatMul + "
                     "Add(bias) or Gemm(transB=1) of a weight parameter");

  const Node& anchor = graph.node(NodeId(m->anchor));
  plan.node = FreshName(graph, anchor.name + "/" + fused_loss::kOpType);
  for (const Node& n : graph.nodes())
    if (m->removed.count(n.id.index())) plan.replaced.push_back(n.name);
  plan.head = m->head;
  plan.weight = graph.value(m->weight).name;
  plan.bias = m->bias.valid();
  const Shape& h = graph.value(m->input).shape;
  plan.rows = 1;
  for (size_t i = 0; i + 1 < h.rank(); ++i) plan.rows *= h.dims[i];
  plan.hidden = ConstantDim(graph, m->weight, m->transposed ? 1 : 0);
  plan.vocab = ConstantDim(graph, m->weight, m->transposed ? 0 : 1);
  // Rows per sample (every dim of h but the batch and H) under the --dim bindings: the tile's
  // rows per sample, cdiv(c, cdiv(V, H)) (fused_loss_ops.cc); 0 when a dim is unbound.
  int64_t tile_rows_per_sample = 0;
  Dim per_sample = 1;
  for (size_t i = 1; i + 1 < h.rank(); ++i) per_sample *= h.dims[i];
  if (Expected<int64_t> c = per_sample.Evaluate(dims); c.ok() && *c >= 1) {
    const int64_t inc_factor = (plan.vocab + plan.hidden - 1) / plan.hidden;
    tile_rows_per_sample = (*c + inc_factor - 1) / inc_factor;
  }
  graph = Rebuild(graph, *m, logits, spec.label_shape, plan.node, tile_rows_per_sample);
  return plan;
}

nlohmann::ordered_json FusedLossPlanToJson(const FusedLossPlan& plan, const Bindings& bindings) {
  nlohmann::ordered_json j;
  j["fused_loss"] = plan.fused();
  if (!plan.fused()) return j;
  if (std::optional<int64_t> chunk = plan.ChunkRowsAt(bindings))
    j["fused_loss_chunk_rows"] = *chunk;
  nlohmann::ordered_json head;
  MEMPLAN_JSON_FIELDS(head, plan, node, head, weight, bias, replaced);
  j["fused_loss_head"] = std::move(head);
  return j;
}

std::string FusedLossPlanText(const FusedLossPlan& plan, const Bindings& bindings) {
  if (!plan.fused()) return "";
  // The head's last node, the one that made the logits (graph order is topological).
  std::string text = "fused linear cross entropy (Liger): head " + plan.replaced.back() +
                     ", logits never materialised";
  const std::optional<int64_t> chunk = plan.ChunkRowsAt(bindings);
  const Expected<int64_t> rows = plan.rows.Evaluate(bindings);
  if (chunk && rows.ok())
    text += ", chunk " + std::to_string(*chunk) + " of " + std::to_string(*rows) + " rows";
  return text;
}

}  // namespace memplan
