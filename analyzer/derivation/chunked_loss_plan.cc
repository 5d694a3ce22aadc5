#include "analyzer/derivation/chunked_loss_plan.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <utility>

#include "analyzer/derivation/lm_head_match.h"
#include "analyzer/program/loss_spec.h"
#include "graph/model_facts.h"

namespace memplan {
namespace {

constexpr const char* kFlag = "--loss-chunks";

std::string FileName(const std::string& model) {
  return std::filesystem::path(model).filename().string();
}

// A value of `shape` with seq (axis 1) set to `rows`.
Value ChunkValue(const std::string& name, DType dtype, Shape shape, int64_t rows) {
  Value v;
  v.name = name;
  v.dtype = dtype;
  shape.dims[1] = Dim(rows);
  v.shape = std::move(shape);
  v.kind = ValueKind::kIntermediate;
  return v;
}

// Appends to `out` the chunked head in the place of the matched one: h.chunk(N, dim=1) as a Split
// (views of h, the registry's Split), then one MatMul (and bias Add) per chunk reading the
// weight operand as the head did. `new_id` maps `g`'s values to `out`'s. Returns the chunks'
// logits, in order.
std::vector<ValueId> AddChunkedHead(const Graph& g, const LmHeadMatch& m, ValueId logits,
                                    const std::vector<int64_t>& rows,
                                    const std::vector<ValueId>& new_id, Graph& out) {
  const Value& h = g.value(m.input);
  const Value& z = g.value(logits);
  const std::string anchor = g.node(NodeId(m.anchor)).name;
  Node split;
  split.name = FreshName(g, anchor + "/chunked_output/Split");
  split.op_type = "Split";
  split.inputs = {new_id[m.input.index()]};
  split.attributes.Set("axis", int64_t{1});
  split.attributes.Set("split", rows);
  for (size_t k = 0; k < rows.size(); ++k)
    split.outputs.push_back(out.AddValue(ChunkValue(
        FreshName(g, h.name + ".chunk" + std::to_string(k)), h.dtype, h.shape, rows[k])));
  const std::vector<ValueId> chunks = split.outputs;
  out.AddNode(std::move(split));
  std::vector<ValueId> chunk_logits;
  for (size_t k = 0; k < rows.size(); ++k) {
    const std::string tag = "chunk" + std::to_string(k);
    std::string prefix = anchor;
    prefix += "/";
    prefix += tag;
    const Value chunk_z = ChunkValue(FreshName(g, z.name + "." + tag), z.dtype, z.shape, rows[k]);
    Node mm;
    mm.name = FreshName(g, prefix + "/MatMul");
    mm.op_type = "MatMul";
    mm.inputs = {chunks[k], new_id[m.projected.index()]};
    ValueId made;
    if (m.bias.valid()) {
      Value product = chunk_z;
      product.name = FreshName(g, chunk_z.name + ".product");
      made = out.AddValue(std::move(product));
    } else {
      made = out.AddValue(chunk_z);
    }
    mm.outputs = {made};
    out.AddNode(std::move(mm));
    if (m.bias.valid()) {
      Node add;
      add.name = FreshName(g, prefix + "/Add");
      add.op_type = "Add";
      add.inputs = {made, new_id[m.bias.index()]};
      made = out.AddValue(chunk_z);
      add.outputs = {made};
      out.AddNode(std::move(add));
    }
    chunk_logits.push_back(made);
  }
  return chunk_logits;
}

// `g` with the head that makes `logits` run once per chunk of h (chunked_loss_plan.h): the
// chunked head (AddChunkedHead) in the head's place; the chunks' logits take the logits' place
// among the graph outputs. The Transpose of a [V, H] weight stays where it was, read by every
// chunk's MatMul. Fills `plan.outputs`.
Graph Rebuild(const Graph& g, const LmHeadMatch& m, ValueId logits, ChunkedLossPlan& plan) {
  Graph out;
  CopyModelFacts(g, out);
  std::set<size_t> removed = m.nodes;
  if (m.transpose) removed.erase(*m.transpose);
  std::vector<ValueId> new_id(g.num_values());
  for (const Value& v : g.values()) {
    if (v.producer.valid() && removed.count(v.producer.index())) continue;
    Value copy = v;
    copy.producer = NodeId();
    copy.consumers.clear();
    copy.is_graph_output = false;
    new_id[v.id.index()] = out.AddValue(std::move(copy));
  }
  for (ValueId in : g.inputs()) out.MarkInput(new_id[in.index()]);
  std::vector<ValueId> chunk_logits;
  for (const Node& n : g.nodes()) {
    if (n.id.index() == m.anchor) {
      chunk_logits = AddChunkedHead(g, m, logits, plan.rows, new_id, out);
      continue;
    }
    if (removed.count(n.id.index())) continue;
    Node copy = n;
    for (ValueId& u : copy.inputs)
      if (u.valid()) u = new_id[u.index()];
    for (ValueId& u : copy.outputs)
      if (u.valid()) u = new_id[u.index()];
    out.AddNode(std::move(copy));
  }
  for (ValueId o : g.outputs()) {
    if (o != logits) {
      out.MarkOutput(new_id[o.index()]);
      continue;
    }
    for (ValueId c : chunk_logits) {
      out.MarkOutput(c);
      plan.outputs.push_back(out.value(c).name);
    }
  }
  return out;
}

}  // namespace

void ChunkedLossPlan::PlanTerms(ProgramOptions& program) const {
  if (!chunked()) return;
  program.loss_outputs = outputs;
  if (program.output_losses.size() == 1)
    program.output_losses.assign(outputs.size(), program.output_losses.front());
}

std::vector<int64_t> TorchChunkSizes(int64_t size, int64_t chunks) {
  const int64_t each = size / chunks + (size % chunks != 0);  // ceil, as torch.chunk
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < size; start += each)
    sizes.push_back(std::min(each, size - start));
  return sizes;
}

Expected<ChunkedLossPlan> ApplyChunkedLoss(Graph& graph, int64_t chunks, LossKind loss,
                                           const std::vector<std::string>& loss_outputs,
                                           const Bindings& dims, const std::string& model) {
  ChunkedLossPlan plan;
  plan.requested = chunks;
  if (chunks <= 0) return plan;
  const std::string flag = kFlag;
  if (loss_outputs.size() > 1)
    return MakeError(flag + " chunks one cross-entropy loss; with several loss outputs drop " +
                     flag);
  ValueId logits;
  if (loss_outputs.empty()) {
    if (graph.outputs().empty()) return MakeError(flag + ": the graph has no output");
    logits = graph.outputs().front();
  } else {
    const std::optional<ValueId> found = graph.FindValue(loss_outputs.front());
    if (!found)
      return MakeError("loss output '" + loss_outputs.front() + "' is not a value of the graph");
    logits = *found;
  }
  const Value& out = graph.value(logits);
  Expected<LossSpec> resolved = ResolveLoss(loss, "", "", out.dtype, out.shape, out.name);
  if (!resolved.ok()) return MakeError(flag + ": " + resolved.error().message);
  if (resolved->kind != LossKind::kCrossEntropy)
    return MakeError(flag +
                     " chunks a cross-entropy loss (torchtune's CEWithChunkedOutputLoss); the "
                     "loss here is " +
                     std::string(LossKindName(resolved->kind)));
  const Expected<int64_t> seq = out.shape.known && out.shape.rank() == 3
                                    ? out.shape.dims[1].Evaluate(dims)
                                    : Expected<int64_t>(MakeError("not [batch, seq, vocab]"));
  if (!seq.ok() || *seq < 1)
    return MakeError(flag +
                     " splits [batch, seq, vocab] logits along a known seq (torchtune's "
                     "chunked_output); bind seq with --dim or drop " +
                     flag);
  if (!out.consumers.empty())
    return MakeError(flag + ": output '" + out.name + "' of model '" + FileName(model) +
                     "' is also read by node '" + graph.node(out.consumers.front()).name +
                     "'; torchtune's chunked_output hands the loss the chunks alone");
  const std::optional<LmHeadMatch> m = MatchLmHead(graph, logits);
  if (!m)
    return MakeError(flag + ": no LM head makes output '" + out.name + "' of model '" +
                     FileName(model) +
                     "' (MatMul(h, W), MatMul(h, Transpose(W)) or MatMul + Add(bias) of a weight "
                     "parameter); torchtune's chunked_output runs the output projection once per "
                     "chunk of tokens");
  plan.logits = out.name;
  plan.head = m->head;
  plan.rows = TorchChunkSizes(*seq, chunks);
  graph = Rebuild(graph, *m, logits, plan);
  return plan;
}

}  // namespace memplan
