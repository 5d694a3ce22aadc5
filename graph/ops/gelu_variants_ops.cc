// The GELU forms ONNX Runtime's transformer optimizer writes (com.microsoft):
//   * FastGelu(X, bias?): the tanh approximation of gelu(X + bias);
//   * BiasGelu(A, B): the exact gelu(A + B).
// ai.onnx Gelu (opset 20, approximate = "none" | "tanh") is registered with the other unary ops
// (elementwise_ops.cc). What the user's PyTorch module ran is `gelu(linear(x))`: the bias add is
// part of addmm and gelu_backward(grad, self, approximate) keeps gelu's input, so one tensor of
// X's shape is saved either way: X itself, or the biased sum when a bias is fused in.

#include "graph/ops/common_rules.h"
#include "graph/ops/op_families.h"
#include "graph/ops/op_registry.h"
#include "graph/ops/shape_helpers.h"

namespace memplan {
namespace {

// tanh form per element: x^3 (2), scale and add (2), scale (1), tanh, +1, *0.5, *x (3).
constexpr int64_t kGeluTanhFlops = kTranscendentalFlops + 8;

OpSchema BiasedGeluSchema(const char* op_type, int64_t flops_per_element, const char* form) {
  OpSchema s;
  s.op_type = op_type;
  s.domain = "com.microsoft";
  s.infer_shapes = [](const OpContext& ctx) -> Expected<std::vector<TensorInfo>> {
    MEMPLAN_TRY(const TensorInfo* x, RequiredInput(ctx, 0));
    Shape shape = x->shape;
    if (ctx.has_input(1)) {
      auto broadcast = BroadcastShapes(x->shape, ctx.inputs[1].shape);
      if (!broadcast) return MakeError(NodeError(ctx.node, broadcast.error().message));
      shape = *broadcast;
    }
    return SingleOutput(x->dtype, shape);
  };
  // The bias add is one more flop per element.
  s.cost = [flops_per_element](const OpContext& ctx) {
    return PerOutputElementCost(ctx, flops_per_element + (ctx.has_input(1) ? kSimpleFlops : 0));
  };
  s.saved_for_backward = WhenDifferentiable([](const OpContext& ctx) {
    if (!ctx.has_input(1)) return std::vector<SavedTensor>{SaveInput(0)};
    const TensorInfo& y = ctx.outputs.empty() ? ctx.inputs[0] : ctx.outputs[0];
    return std::vector<SavedTensor>{SaveExtra("gelu_input", ctx.inputs[0].dtype, y.shape)};
  });
  s.backward_flops_factor = kElementwiseBackwardFactor;
  s.amp = AmpCategory::kFollowInputs;
  s.saved_source = DerivativesSource(std::string("gelu: gelu_backward(grad, self, \"") + form +
                                     "\") saves self, here input + bias when a bias is fused");
  s.amp_source = AutocastSource(kNotAutocastListed);
  return s;
}

}  // namespace

void RegisterGeluVariantOps(OpRegistry& registry) {
  registry.Register(BiasedGeluSchema("FastGelu", kGeluTanhFlops, "tanh"));
  registry.Register(BiasedGeluSchema("BiasGelu", kGeluFlops, "none"));
}

int64_t GeluFlopsPerElement(const OpContext& ctx) {
  return ctx.attrs().GetString("approximate", "none") == "tanh" ? kGeluTanhFlops : kGeluFlops;
}

}  // namespace memplan
