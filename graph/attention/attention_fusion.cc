#include "graph/attention/attention_fusion.h"

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>
#include <utility>

#include "graph/attention/attention_patterns.h"
#include "graph/model_facts.h"
#include "graph/ops/sdpa_op.h"

namespace memplan {

using attention::IsOp;
using attention::Match;
using attention::MatchEager;
using attention::MatchOnnxAttention;
using attention::MatchOrtMultiHeadAttention;
using attention::SoftmaxOverLastAxis;
using attention::StripNanGuard;

namespace {

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
