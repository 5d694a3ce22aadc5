#include "graph/ops/view_layout.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace memplan {
namespace {

bool IsOne(const Dim& d) { return d.constant_value() == std::optional<int64_t>(1); }

// Output `out` of input `in` (same rank) is one dense block: every axis before the first narrowed
// one has size 1 and no later axis is narrowed.
bool OneLeadingBlock(const Shape& in, const Shape& out) {
  if (!in.known || !out.known || in.rank() != out.rank()) return false;
  bool narrowed = false;
  for (size_t d = 0; d < in.rank(); ++d) {
    const bool differs = !(in.dims[d] == out.dims[d]);
    if (narrowed && differs) return false;  // a second narrowed axis
    if (narrowed) continue;
    if (differs) {
      narrowed = true;
    } else if (!IsOne(in.dims[d])) {
      // An axis longer than 1 before any narrowing: a narrowing after it is strided. Keep looking
      // only to tell "nothing narrowed" (contiguous) from "narrowed later" (strided).
      for (size_t e = d + 1; e < in.rank(); ++e)
        if (!(in.dims[e] == out.dims[e])) return false;
      return true;
    }
  }
  return true;
}

}  // namespace

bool NarrowedBlockIsContiguous(const OpContext& ctx) {
  if (ctx.inputs.empty()) return false;
  // Slice(data, starts, ends, axes, steps): a step other than 1 skips elements.
  if (ctx.node.op_type == "Slice" && ctx.has_input(4)) {
    if (!ctx.inputs[4].contents) return false;
    for (const Dim& step : *ctx.inputs[4].contents)
      if (!IsOne(step)) return false;
  }
  for (const TensorInfo& out : ctx.outputs)
    if (out.present && !OneLeadingBlock(ctx.inputs[0].shape, out.shape)) return false;
  return true;
}

bool PermutationIsContiguous(const OpContext& ctx) {
  if (ctx.inputs.empty() || !ctx.inputs[0].shape.known) return false;
  const Shape& in = ctx.inputs[0].shape;
  std::vector<int64_t> perm = ctx.attrs().GetInts("perm");
  if (perm.empty())
    for (size_t i = in.rank(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  int64_t last = -1;
  for (int64_t p : perm) {
    const int64_t axis = p < 0 ? p + static_cast<int64_t>(in.rank()) : p;
    if (axis < 0 || axis >= static_cast<int64_t>(in.rank())) return false;
    if (IsOne(in.dims[static_cast<size_t>(axis)])) continue;
    if (axis < last) return false;
    last = axis;
  }
  return true;
}

bool ExpansionIsContiguous(const OpContext& ctx) {
  if (ctx.inputs.empty() || ctx.outputs.empty()) return false;
  const Shape& in = ctx.inputs[0].shape;
  const Shape& out = ctx.outputs[0].shape;
  if (!in.known || !out.known) return false;
  return in.NumElements() == out.NumElements();
}

}  // namespace memplan
