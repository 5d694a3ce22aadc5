#include "analyzer/parallel/tensor_parallel.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "analyzer/recompute/module_units.h"
#include "analyzer/text/json_fields.h"
#include "graph/linear_weight.h"
#include "graph/ops/split_axis_rules.h"
#include "graph/trainable_parameters.h"

namespace memplan {
namespace {

// Regions are identified by their column seeds; regions that meet at a node merge. A region
// fails at the first node that cannot run on its parts.
class Regions {
 public:
  struct Failure {
    NodeId node;               // invalid: not failed
    bool indivisible = false;  // the node could run on parts, but T does not divide a size
  };
  int Add() {
    parent_.push_back(static_cast<int>(parent_.size()));
    failures_.emplace_back();
    return parent_.back();
  }
  int Find(int r) {
    while (parent_[r] != r) r = parent_[r] = parent_[parent_[r]];
    return r;
  }
  int Merge(int a, int b) {
    a = Find(a), b = Find(b);
    if (a == b) return a;
    parent_[b] = a;
    if (!failures_[a].node.valid()) failures_[a] = failures_[b];
    return a;
  }
  void Fail(int r, NodeId node, bool indivisible = false) {
    Failure& f = failures_[Find(r)];
    if (!f.node.valid()) f = Failure{node, indivisible};
  }
  bool Failed(int r) { return failures_[Find(r)].node.valid(); }
  const Failure& FailureOf(int r) { return failures_[Find(r)]; }

 private:
  std::vector<int> parent_;
  std::vector<Failure> failures_;
};

// A linear product x W: the node, its weight parameter and the operand it reads
// (the weight itself, or the Transpose of it that torch.onnx writes for nn.Linear).
struct LinearProduct {
  ValueId weight;
  ValueId operand;               // node input 1
  bool weight_rows_out = false;  // W is [out, in] (Gemm transB = 1, or read through Transpose)
};

std::map<NodeId, LinearProduct> LinearProducts(const Graph& graph) {
  std::map<NodeId, LinearProduct> found;
  for (const Value& v : graph.values()) {
    if (v.kind != ValueKind::kParameter) continue;
    std::optional<LinearWeightUse> use = AsLinearWeight(graph, v.id);
    if (!use || use->products.size() != 1) continue;  // tied weights stay whole
    const NodeId product = use->products[0];
    const Node& n = graph.node(product);
    LinearProduct p{v.id, n.inputs.at(1), use->stored_out_by_in};
    found.emplace(product, p);
  }
  return found;
}

struct Pass {
  std::vector<TensorSplit> split;  // by ValueId
  std::vector<int> region;         // by ValueId: the region of a split value (-1: none)
  Regions regions;
  std::map<NodeId, int> column;  // column product -> its region
  std::map<NodeId, int> row;     // row product -> the region it closes
};

// One forward sweep with the column seeds not in `excluded`.
Pass Sweep(const Graph& graph, const std::vector<NodeId>& order,
           const std::map<NodeId, LinearProduct>& products, const std::set<NodeId>& excluded,
           int64_t parts) {
  Pass p;
  p.split.assign(graph.num_values(), TensorSplit{});
  p.region.assign(graph.num_values(), -1);
  // A parameter or constant is split by the first node that splits it; every other reader must
  // split it the same way, in the same region.
  std::map<ValueId, std::pair<TensorSplit, int>> split_inputs;  // value -> (split, region)
  std::map<ValueId, int> split_readers;                         // value -> readers that split it

  auto split_value = [&](ValueId v, const TensorSplit& split, int region) {
    p.split[v.index()] = split;
    p.region[v.index()] = region;
  };
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    std::vector<TensorSplit> inputs;
    int region = -1;
    for (ValueId in : node.inputs) {
      inputs.push_back(in.valid() ? p.split[in.index()] : TensorSplit{});
      if (inputs.back().split()) {
        const int r = p.region[in.index()];
        region = region < 0 ? r : p.regions.Merge(region, r);
      }
    }
    if (products.count(id)) {
      const Shape& xs = graph.value(node.inputs.at(0)).shape;
      const Shape& out = graph.value(node.outputs.at(0)).shape;
      if (!xs.known || !out.known) continue;
      const int last = static_cast<int>(xs.rank()) - 1;
      if (!inputs[0].split() && !excluded.count(id) && DividesInto(out.dims.back(), parts)) {
        const int r = p.regions.Add();
        p.column[id] = r;
        const int axis = static_cast<int>(out.rank()) - 1;
        split_value(node.outputs[0], WholeAxisSplit(axis, out.dims.back()), r);
        continue;
      }
      if (inputs[0].axis == last && !inputs[1].split()) {
        p.row[id] = region;  // closes the region: the output is whole after the all-reduce
        continue;
      }
    }
    if (region < 0) continue;
    std::optional<SplitAxes> split = PropagateSplit(graph, node, inputs, parts);
    if (!split) {
      // Whether the op could run on parts of a size T divided: then T is what is wrong.
      p.regions.Fail(region, id, PropagateSplit(graph, node, inputs, 1).has_value());
      continue;
    }
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (inputs[i].split() || !split->inputs[i].split()) continue;
      const ValueId v = node.inputs[i];
      auto [pos, fresh] = split_inputs.emplace(v, std::make_pair(split->inputs[i], region));
      if (!fresh) {
        if (!(pos->second.first == split->inputs[i])) p.regions.Fail(region, id);
        region = p.regions.Merge(region, pos->second.second);
      }
      ++split_readers[v];
    }
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const ValueId out = node.outputs[i];
      if (!out.valid() || !split->outputs[i].split()) continue;
      split_value(out, split->outputs[i], region);
    }
  }
  for (ValueId out : graph.outputs())
    if (p.split[out.index()].split())
      p.regions.Fail(p.region[out.index()], graph.value(out).producer);
  // A split parameter read whole elsewhere cannot be split.
  for (const auto& [v, readers] : split_readers)
    if (readers != static_cast<int>(graph.value(v).consumers.size()))
      p.regions.Fail(split_inputs[v].second, graph.value(v).consumers.front());
  for (const auto& [v, entry] : split_inputs) split_value(v, entry.first, entry.second);
  return p;
}

Status DivideAxis(Graph& graph, ValueId id, int axis, int64_t parts) {
  Value& v = graph.mutable_value(id);
  std::optional<Dim> part = v.shape.dims.at(axis).DivideExactly(Dim(parts));
  if (!part) return MakeError("--tp: value '" + v.name + "' does not split evenly");
  v.shape.dims[axis] = *part;
  return OkStatus();
}

}  // namespace

Expected<TensorParallelPlan> ApplyTensorParallel(Graph& graph, int64_t degree,
                                                 const std::string& model_name) {
  TensorParallelPlan plan;
  plan.degree = degree;
  if (degree < 1) return MakeError("--tp must be at least 1");
  if (degree == 1) return plan;
  const std::string flag = "--tp " + std::to_string(degree);
  const std::vector<CheckpointableModule> blocks = FindCheckpointableModules(graph);
  plan.blocks = static_cast<int64_t>(blocks.size());
  std::vector<int> block_of(graph.num_nodes(), -1);
  for (size_t b = 0; b < blocks.size(); ++b)
    for (NodeId n : blocks[b].nodes) block_of[n.index()] = static_cast<int>(b);
  MEMPLAN_TRY(std::vector<NodeId> order, graph.TopologicalOrder());
  const std::map<NodeId, LinearProduct> products = LinearProducts(graph);

  // Retry without the seeds of failed regions until every region left closes.
  std::set<NodeId> excluded;
  Pass pass;
  for (;;) {
    pass = Sweep(graph, order, products, excluded, degree);
    bool failed = false;
    for (const auto& [node, region] : pass.column) {
      if (!pass.regions.Failed(region)) continue;
      const Regions::Failure& failure = pass.regions.FailureOf(region);
      if (failure.indivisible) {
        const Node& at = graph.node(failure.node);
        const int block = block_of[failure.node.index()];
        return MakeError(flag + ": node '" + at.name + "' (" + at.op_type + ")" +
                         (block >= 0 ? " in block '" + blocks[block].path + "'" : "") + " of " +
                         model_name + " cannot split " + std::to_string(degree) +
                         " ways: the heads or hidden units it splits are not a multiple of " +
                         std::to_string(degree));
      }
      excluded.insert(node);
      failed = true;
    }
    if (!failed) break;
  }
  if (pass.column.empty()) {
    return MakeError(flag + ": no linear layer of " + model_name + " splits " +
                     std::to_string(degree) +
                     " ways (a column-parallel layer whose split reaches row-parallel ones, with "
                     "heads and hidden units a multiple of " +
                     std::to_string(degree) + ")");
  }

  plan.parameters_before = ModelParameterCount(graph);
  std::set<int> blocks_split;
  std::set<ValueId> column_inputs;
  for (const auto& [node, region] : pass.column) {
    const Node& n = graph.node(node);
    const LinearProduct& lp = products.at(node);
    plan.column.push_back(graph.value(lp.weight).name);
    if (block_of[node.index()] >= 0) blocks_split.insert(block_of[node.index()]);
    // W [in, out] splits its axis 1 (out); [out, in] its axis 0. A Transpose between them
    // carries the split: its output is [in, out].
    MEMPLAN_RETURN_IF_ERROR(DivideAxis(graph, lp.weight, lp.weight_rows_out ? 0 : 1, degree));
    if (lp.operand != lp.weight) MEMPLAN_RETURN_IF_ERROR(DivideAxis(graph, lp.operand, 1, degree));
    column_inputs.insert(n.inputs.at(0));
  }
  for (const auto& [node, region] : pass.row) {
    if (region < 0 || pass.regions.Failed(region)) continue;
    const Node& n = graph.node(node);
    const LinearProduct& lp = products.at(node);
    plan.row.push_back(graph.value(lp.weight).name);
    MEMPLAN_RETURN_IF_ERROR(DivideAxis(graph, lp.weight, lp.weight_rows_out ? 1 : 0, degree));
    if (lp.operand != lp.weight) MEMPLAN_RETURN_IF_ERROR(DivideAxis(graph, lp.operand, 0, degree));
    plan.forward_all_reduces.push_back(graph.value(n.outputs.at(0)).shape.NumElements());
  }
  for (ValueId x : column_inputs)
    plan.backward_all_reduces.push_back(graph.value(x).shape.NumElements());
  for (const Value& v : graph.values()) {
    const TensorSplit& split = pass.split[v.id.index()];
    if (!split.split()) continue;
    MEMPLAN_RETURN_IF_ERROR(DivideAxis(graph, v.id, split.axis, degree));
  }
  plan.blocks_split = static_cast<int64_t>(blocks_split.size());
  plan.parameters_after = ModelParameterCount(graph);
  return plan;
}

nlohmann::ordered_json TensorParallelJson(const TensorParallelPlan& plan) {
  if (!plan.enabled()) return nullptr;
  nlohmann::ordered_json j;
  MEMPLAN_JSON_FIELDS(j, plan, degree, blocks, blocks_split);
  j["column_parallel"] = plan.column;
  j["row_parallel"] = plan.row;
  j["all_reduces_per_micro_batch"] =
      plan.forward_all_reduces.size() + plan.backward_all_reduces.size();
  j["parameters_per_rank"] = plan.parameters_after;
  j["parameters"] = plan.parameters_before;
  return j;
}

std::string TensorParallelLine(const TensorParallelPlan& plan) {
  if (!plan.enabled()) return "";
  std::ostringstream s;
  s << "tensor parallel " << plan.degree << ": " << plan.column.size() << " column-, "
    << plan.row.size() << " row-parallel linear layers (" << plan.blocks_split << " of "
    << plan.blocks << " blocks split), " << plan.parameters_after << " of "
    << plan.parameters_before << " parameters per rank, "
    << plan.forward_all_reduces.size() + plan.backward_all_reduces.size()
    << " all-reduces per micro-batch";
  return s.str();
}

}  // namespace memplan
