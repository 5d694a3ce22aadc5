#include "graph/fusion/fusion_table.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "graph/expected.h"
#include "graph/fusion/patterns.h"
#include "graph/fusion/proto_index.h"

namespace memplan {
namespace {

std::string ScopeOf(const std::string& node_name) {
  const size_t slash = node_name.rfind('/');
  return slash == std::string::npos ? node_name : node_name.substr(0, slash);
}

void ImportDomain(onnx::ModelProto& model, const std::string& domain) {
  if (domain.empty() || domain == "ai.onnx") return;
  for (const auto& op : model.opset_import())
    if (op.domain() == domain) return;
  auto* op = model.add_opset_import();
  op->set_domain(domain);
  op->set_version(1);
}

}  // namespace

const std::vector<FusionEntry>& FusionTable() {
  static const std::vector<FusionEntry> table = {
      {"layer_norm", FusionSet::kFusedOps, &MatchLayerNorm, "ReduceMean"},
      {"rms_norm", FusionSet::kAll, &MatchRmsNorm, "ReduceMean", /*liger_kernel=*/true},
      {"group_norm", FusionSet::kFusedOps, &MatchGroupNorm, "InstanceNormalization"},
      {"erf_gelu", FusionSet::kFusedOps, &MatchErfGelu, "Erf"},
      {"erf_gelu_formula", FusionSet::kAll, &MatchErfGeluFormula, "Erf"},
      {"tanh_gelu", FusionSet::kFusedOps, &MatchTanhGelu, "Tanh"},
      {"tanh_gelu_torchlib", FusionSet::kFusedOps, &MatchTanhGeluTorchLib, "Tanh"},
      {"tanh_gelu_formula", FusionSet::kAll, &MatchTanhGeluFormula, "Tanh"},
      {"silu", FusionSet::kFusedOps, &MatchSilu, "Sigmoid"},
      {"hard_swish", FusionSet::kFusedOps, &MatchHardSwish, "HardSigmoid"},
      {"zero_dropout", FusionSet::kFusedOps, &MatchZeroDropout, "Dropout"},
      {"pad_avg_pool", FusionSet::kFusedOps, &MatchPadAvgPool, "Pad"},
      // After layer_norm, whose chain begins with the same mean, Sub and square (there d also
      // feeds the Div, which variance refuses).
      {"variance", FusionSet::kFusedOps, &MatchVariance, "ReduceMean"},
      {"variance_formula", FusionSet::kAll, &MatchVarianceFormula, "ReduceMean"},
      {"max_dim", FusionSet::kFusedOps, &MatchMaxDim, "ReduceMax"},
      {"glu", FusionSet::kFusedOps, &MatchGlu, "Split"},
      // After silu and the tanh GELUs, whose Swish and Gelu they read.
      {"swiglu", FusionSet::kLiger, &MatchSwiGlu, "Swish", /*liger_kernel=*/true},
      {"geglu", FusionSet::kLiger, &MatchGeGlu, "Gelu", /*liger_kernel=*/true},
      // After the norms: rms_norm (under kAll) takes the same Sqrt -> Div(1, .) into its match.
      {"rsqrt", FusionSet::kFusedOps, &MatchRsqrt, "Sqrt"},
  };
  return table;
}

const FusionEntry& FusionEntryNamed(const std::string& name) {
  for (const auto& entry : FusionTable())
    if (name == entry.name) return entry;
  MEMPLAN_UNREACHABLE("no fusion entry of that name");
  return FusionTable().front();
}

int FusionCounts::total() const {
  int sum = 0;
  for (const auto& [name, count] : by_entry) sum += count;
  return sum;
}

int ApplyFusion(onnx::ModelProto& model, const FusionEntry& entry) {
  onnx::GraphProto& g = *model.mutable_graph();
  const bool anchored = std::any_of(g.node().begin(), g.node().end(),
                                    [&](const auto& n) { return n.op_type() == entry.anchor_op; });
  if (!anchored) return 0;
  std::vector<FusionMatch> matches;
  std::unordered_set<int> claimed;
  {
    const ProtoIndex index(g);
    for (int i = 0; i < g.node_size(); ++i) {
      auto m = entry.match(index, i);
      if (!m) continue;
      bool overlaps = false;
      for (int n : m->nodes) overlaps |= claimed.count(n) > 0;
      if (overlaps) continue;
      claimed.insert(m->nodes.begin(), m->nodes.end());
      matches.push_back(std::move(*m));
    }
  }
  if (matches.empty()) return 0;

  // Values something still reads once the patterns are gone: kept nodes' and fused nodes' inputs
  // and the graph outputs. A Constant node or an initializer nobody reads any more goes too.
  std::unordered_set<std::string> still_read;
  for (int i = 0; i < g.node_size(); ++i) {
    if (claimed.count(i)) continue;
    for (const auto& in : g.node(i).input()) still_read.insert(in);
  }
  for (const auto& m : matches)
    for (const auto& in : m.fused.input()) still_read.insert(in);
  for (const auto& out : g.output()) still_read.insert(out.name());
  std::unordered_set<std::string> read_by_pattern;
  for (int i : claimed)
    for (const auto& in : g.node(i).input()) read_by_pattern.insert(in);
  auto orphaned = [&](const std::string& name) {
    return read_by_pattern.count(name) > 0 && still_read.count(name) == 0;
  };

  std::unordered_set<int> removed = claimed;
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    if (n.op_type() == "Constant" && n.output_size() == 1 && orphaned(n.output(0)))
      removed.insert(i);
  }

  // Names of the nodes that stay: a fused node may take a removed node's name (pad_avg_pool's
  // AveragePool keeps the exported pool's).
  std::unordered_set<std::string> names;
  for (int i = 0; i < g.node_size(); ++i)
    if (!removed.count(i)) names.insert(g.node(i).name());
  std::unordered_map<int, FusionMatch*> fused_at;
  for (auto& m : matches) fused_at[m.last] = &m;

  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  for (int i = 0; i < g.node_size(); ++i) {
    if (auto it = fused_at.find(i); it != fused_at.end()) {
      onnx::NodeProto* node = kept.Add();
      node->Swap(&it->second->fused);
      const std::string scope = ScopeOf(g.node(i).name());
      std::string name = scope + "/" + node->op_type();
      for (int k = 1; names.count(name); ++k)
        name = scope + "/" + node->op_type() + "_" + std::to_string(k);
      names.insert(name);
      node->set_name(name);
      ImportDomain(model, node->domain());
      continue;
    }
    if (!removed.count(i)) kept.Add()->Swap(g.mutable_node(i));
  }
  g.mutable_node()->Swap(&kept);

  // Initializers only the patterns read (their scalar constants). One that is also declared as a
  // graph input (IR < 4) stays: the input would otherwise lose its default.
  std::unordered_set<std::string> inputs;
  for (const auto& in : g.input()) inputs.insert(in.name());
  google::protobuf::RepeatedPtrField<onnx::TensorProto> initializers;
  for (auto& t : *g.mutable_initializer())
    if (!orphaned(t.name()) || inputs.count(t.name())) initializers.Add()->Swap(&t);
  g.mutable_initializer()->Swap(&initializers);
  return static_cast<int>(matches.size());
}

bool FusionSetApplies(FusionSet set, const FusionEntry& entry) {
  switch (set) {
    case FusionSet::kNone:
      return false;
    case FusionSet::kFusedOps:
      return entry.set == FusionSet::kFusedOps;
    case FusionSet::kAll:
      return entry.set == FusionSet::kFusedOps || entry.set == FusionSet::kAll;
    case FusionSet::kLiger:
      return entry.set == FusionSet::kFusedOps || entry.liger_kernel;
  }
  return false;
}

FusionCounts FuseImportPatterns(onnx::ModelProto& model, FusionSet set) {
  FusionCounts counts;
  if (set == FusionSet::kNone) return counts;
  for (const auto& entry : FusionTable()) {
    if (!FusionSetApplies(set, entry)) continue;
    if (int formed = ApplyFusion(model, entry); formed > 0) counts.by_entry[entry.name] = formed;
  }
  return counts;
}

}  // namespace memplan
