#include "analyzer/derivation/fused_loss_plan.h"

#include <filesystem>
#include <utility>

#include "analyzer/derivation/lm_head_match.h"
#include "analyzer/program/loss_spec.h"
#include "analyzer/text/json_fields.h"
#include "graph/model_facts.h"
#include "graph/ops/fused_loss_op.h"

namespace memplan {
namespace {

// `g` without the matched head, with the labels input and the fused node in its place, its loss
// the graph output that was the logits.
Graph Rebuild(const Graph& g, const LmHeadMatch& m, ValueId logits, const Shape& label_shape,
              const std::string& node_name, int64_t tile_rows_per_sample) {
  Graph out;
  CopyModelFacts(g, out);
  out.opset_imports[fused_loss::kDomain] = 1;

  std::vector<ValueId> new_id(g.num_values());
  for (const Value& v : g.values()) {
    const bool made_by_removed = v.producer.valid() && m.nodes.count(v.producer.index());
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
    if (m.nodes.count(n.id.index())) continue;
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
  std::optional<LmHeadMatch> m = MatchLmHead(graph, logits);
  if (!m)
    return MakeError(prefix + "no LM head feeds the loss of model '" + FileName(model) +
                     "': output '" + out.name +
                     "' is not made by MatMul(h, W), MatMul(h, Transpose(W)), MatMul + "
                     "Add(bias) or Gemm(transB=1) of a weight parameter");

  const Node& anchor = graph.node(NodeId(m->anchor));
  plan.node = FreshName(graph, anchor.name + "/" + fused_loss::kOpType);
  for (const Node& n : graph.nodes())
    if (m->nodes.count(n.id.index())) plan.replaced.push_back(n.name);
  plan.head = m->head;
  plan.weight = graph.value(m->weight).name;
  plan.bias = m->bias.valid();
  const Shape& h = graph.value(m->input).shape;
  plan.rows = 1;
  for (size_t i = 0; i + 1 < h.rank(); ++i) plan.rows *= h.dims[i];
  plan.hidden = m->hidden;
  plan.vocab = m->vocab;
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
