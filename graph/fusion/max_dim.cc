// max_dim: torch.max(x, dim) (and x.max(dim)), exported as ReduceMax over one axis, with ArgMax
// beside it on the same input, axis and keepdims when the indices are read (torch.onnx's
// _max_helper, onnxscript's aten_max_dim; an unread ArgMax is removed as dead code). Fused into
// memplan:MaxDim (graph/ops/max_dim_op.h), which the registry plans as max.dim: only the int64
// indices kept, where ReduceMax is planned as amax (self and result kept).
//
// torch's own decomposition is the guide: amax and max.dim export the same ReduceMax, so the node
// is max.dim when
//   * an ArgMax reads the same x over the same axis with the same keepdims (the pair is one
//     max.dim: torch computes values and indices in one kernel), or
//   * it reduces one axis with keepdims = 0 and no ArgMax: torch.max(x, dim)'s default
//     (PointNet's global feature, x.max(dim)[0]); amax is written keepdim=True wherever its
//     result is broadcast back (x - x.amax(dim, keepdim=True)), and those are left as amax.
// Left alone: several axes or none (amax, or torch.max(x), which keeps self and result like amax),
// an ArgMax with select_last_index, a ReduceMax that is a graph output and an ArgMax that is one.

#include "graph/fusion/patterns.h"
#include "graph/ops/max_dim_op.h"

namespace memplan {
namespace {

int64_t IntAttribute(const onnx::NodeProto& n, const std::string& name, int64_t fallback) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.i();
  return fallback;
}

// The ArgMax reading `x` over `axis` with `keepdims` (first occurrences, as torch's), if any.
std::optional<int> SiblingArgMax(const ProtoIndex& index, const std::string& x, int64_t axis,
                                 bool keepdims) {
  for (int c : index.Consumers(x)) {
    const auto& n = index.node(c);
    if (!IsOp(n, "ArgMax", 1)) continue;
    if (IntAttribute(n, "axis", 0) != axis || (IntAttribute(n, "keepdims", 1) != 0) != keepdims ||
        IntAttribute(n, "select_last_index", 0) != 0)
      continue;
    return c;
  }
  return std::nullopt;
}

}  // namespace

std::optional<FusionMatch> MatchMaxDim(const ProtoIndex& index, int max_node) {
  const auto& max = index.node(max_node);
  auto reduction = ReductionOf(index, max, "ReduceMax");
  if (!reduction || reduction->axes.size() != 1) return std::nullopt;
  const std::string& x = max.input(0);
  const int64_t axis = reduction->axes[0];
  const auto arg_max = SiblingArgMax(index, x, axis, reduction->keepdims);
  if (!arg_max && reduction->keepdims) return std::nullopt;

  FusionMatch m;
  m.nodes = {max_node};
  m.last = max_node;
  if (arg_max) {
    m.nodes.push_back(*arg_max);
    // The earlier of the two: each reads only x, and each output's readers follow its producer.
    m.last = std::min(max_node, *arg_max);
  }
  m.fused = FusedNode(max_dim::kOpType, max_dim::kDomain, {x}, max.output(0));
  if (arg_max) m.fused.add_output(index.node(*arg_max).output(0));
  SetIntsAttribute(m.fused, "axes", {axis});
  SetIntAttribute(m.fused, "keepdims", reduction->keepdims ? 1 : 0);
  return m;
}

}  // namespace memplan
