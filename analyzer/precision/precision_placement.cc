#include "analyzer/precision/precision_placement.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "analyzer/precision/dtype_propagation.h"
#include "analyzer/precision/precision_policy.h"
#include "graph/ops/op_registry.h"

namespace memplan {
namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// One --fp32-ops / --fp16-ops entry and what it reached.
struct OverrideEntry {
  std::string text;
  std::string_view flag;
  DType dtype = DType::kUndefined;
  bool matched = false;  // names some node or op type of the graph
  bool placed = false;   // reached a node whose dtype the policy chooses
};

// The mutable state of one placement; PlacePrecision() is its facade. It resolves the override
// lists; the dtypes come from PropagateDTypes (dtype_propagation.h), the same function the
// derivation's precision pass runs, so a program given this placement runs exactly it.
class Placer {
 public:
  Placer(const Graph& graph, const PrecisionOptions& options)
      : g_(graph),
        options_(options),
        registry_(options.registry ? *options.registry : OpRegistry::Get()),
        working_(WorkingDType(options.mode)) {}

  Expected<PrecisionPlacement> Run() {
    PrecisionPlacement result;
    result.precision = options_.mode;
    result.amp_mode = options_.amp_mode;
    result.loss_scaling = DefaultLossScaling(options_.mode);
    if (options_.mode != Precision::kFp32 && options_.loss_scaling) {
      result.loss_scaling = *options_.loss_scaling;
      if (result.loss_scaling.mode == LossScalingMode::kStatic &&
          !(std::isfinite(result.loss_scaling.scale) && result.loss_scaling.scale > 0)) {
        return MakeError("a static loss scale must be a positive finite number, got " +
                         std::to_string(result.loss_scaling.scale));
      }
    }
    MEMPLAN_RETURN_IF_ERROR(ResolveOverrides());
    result.nodes.resize(g_.num_nodes());
    for (size_t n = 0; n < g_.num_nodes(); ++n) result.nodes[n].node = NodeId(n);
    result.node_dtype.assign(g_.num_nodes(), std::nullopt);
    if (working_ == DType::kUndefined) return result;

    MEMPLAN_TRY(std::vector<NodeId> order, g_.TopologicalOrder());
    // The overrides as node dtypes (a node name beats an op type); the propagation applies them.
    std::vector<std::optional<DType>> node_override(g_.num_nodes());
    for (size_t n = 0; n < g_.num_nodes(); ++n)
      if (const OverrideEntry* e = OverrideFor(NodeId(n))) node_override[n] = e->dtype;
    PropagatedDTypes propagated = PropagateDTypes(
        g_, registry_, order, RegimeOf(options_.mode, options_.amp_mode), node_override);
    for (size_t n = 0; n < g_.num_nodes(); ++n) {
      const NodeDType& decided = propagated.nodes[n];
      if (!decided.placed) continue;
      NodePlacement& placed = result.nodes[n];
      placed.dtype = decided.compute;
      placed.reason = decided.reason;
      placed.decided_by = decided.decided_by;
      if (decided.reason == PlacementReason::kOverride) {
        OverrideEntry* e = OverrideFor(NodeId(n));
        e->placed = true;
        placed.override_entry = e->text;
      }
      result.node_dtype[n] = placed.dtype;
    }
    for (const OverrideEntry& e : entries_) {
      if (!e.placed) {
        return MakeError(std::string(e.flag) + " entry '" + e.text +
                         "' names only nodes whose dtype is not placed (views, Cast nodes, "
                         "nodes on non-floating tensors, or constant computations)");
      }
    }
    return result;
  }

 private:
  // Matches every entry against node names and op types; a node name beats an op type.
  Status ResolveOverrides() {
    std::map<std::string, size_t> index;
    auto add = [&](const std::vector<std::string>& list, std::string_view flag,
                   DType dtype) -> Status {
      for (const std::string& text : list) {
        auto [it, inserted] = index.emplace(text, entries_.size());
        if (!inserted) {
          if (entries_[it->second].flag == flag) continue;  // listed twice in one flag: harmless
          return MakeError("'" + text + "' is in both --fp32-ops and --fp16-ops");
        }
        entries_.push_back(OverrideEntry{text, flag, dtype});
      }
      return OkStatus();
    };
    MEMPLAN_RETURN_IF_ERROR(add(options_.force_fp32, "--fp32-ops", DType::kFloat32));
    MEMPLAN_RETURN_IF_ERROR(add(options_.force_fp16, "--fp16-ops", working_));

    by_name_.assign(g_.num_nodes(), -1);
    by_op_.assign(g_.num_nodes(), -1);
    for (const Node& node : g_.nodes()) {
      if (auto it = index.find(node.name); it != index.end()) {
        by_name_[node.id.index()] = static_cast<int>(it->second);
        entries_[it->second].matched = true;
      }
      if (auto it = index.find(node.op_type); it != index.end()) {
        by_op_[node.id.index()] = static_cast<int>(it->second);
        entries_[it->second].matched = true;
      }
    }
    for (const OverrideEntry& e : entries_) {
      if (!e.matched) return MakeError(UnmatchedMessage(e));
    }
    // fp32 mode: nothing is placed, so whether an entry reaches a placeable node is moot.
    if (working_ == DType::kUndefined)
      for (OverrideEntry& e : entries_) e.placed = true;
    return OkStatus();
  }

  std::string UnmatchedMessage(const OverrideEntry& e) const {
    std::string message = std::string(e.flag) + " entry '" + e.text +
                          "' matches no node name or op type in the graph";
    const std::string lower = Lower(e.text);
    for (const Node& node : g_.nodes()) {
      for (const std::string* candidate : {&node.op_type, &node.name}) {
        if (Lower(*candidate) == lower) return message + " (did you mean '" + *candidate + "'?)";
      }
    }
    return message;
  }

  // The override that applies to `n` (name first), or null.
  OverrideEntry* OverrideFor(NodeId n) {
    int e = by_name_[n.index()] >= 0 ? by_name_[n.index()] : by_op_[n.index()];
    return e >= 0 ? &entries_[static_cast<size_t>(e)] : nullptr;
  }

  const Graph& g_;
  const PrecisionOptions& options_;
  const OpRegistry& registry_;
  const DType working_;
  std::vector<OverrideEntry> entries_;
  std::vector<int> by_name_;  // per node: index into entries_ of a node-name match, -1 if none
  std::vector<int> by_op_;    // per node: index into entries_ of an op-type match, -1 if none
};

}  // namespace

Expected<PrecisionPlacement> PlacePrecision(const Graph& graph, const PrecisionOptions& options) {
  Placer placer(graph, options);
  return placer.Run();
}

Expected<std::vector<std::string>> ParseOpList(std::string_view text, std::string_view flag) {
  std::vector<std::string> entries;
  if (text.empty()) return entries;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string_view item = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front())))
      item.remove_prefix(1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back())))
      item.remove_suffix(1);
    if (item.empty())
      return MakeError(std::string(flag) + " has an empty entry in '" + std::string(text) +
                       "'; give op types or node names separated by commas");
    entries.emplace_back(item);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return entries;
}

}  // namespace memplan
