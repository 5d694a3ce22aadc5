// The gated MLPs Liger Kernel replaces, after the activation entries formed their activation node:
//   swiglu: a LLaMA-style MLP's F.silu(gate_proj(x)) * up_proj(x), the silu entry's Swish (alpha 1)
//           times b: Mul(Swish(a), b) becomes memplan:SwiGlu(a, b) (LigerSiLUMulFunction; HF's
//           use_liger_kernel=True, apply_liger_kernel_to_llama/mistral/qwen2/phi3's swiglu=True);
//   geglu:  Gemma's gelu_pytorch_tanh(gate_proj(x)) * up_proj(x), the tanh_gelu entries' Gelu
//           (approximate "tanh") times b: Mul(Gelu(a), b) becomes memplan:GeGlu(a, b)
//           (LigerGELUMulFunction; apply_liger_kernel_to_gemma/gemma2/gemma3's geglu=True).
//           Liger's LigerGEGLUMLP takes gelu_pytorch_tanh only and raises on any other hidden_act,
//           so an exact (erf) Gelu is left.
// See graph/ops/gated_mlp_ops.h. Applied only under FusionSet::kLiger: eager autograd keeps act(a)
// for the Mul, Liger does not.
//
// The activation must feed only the Mul; the Mul's other operand is b, whichever side it is on.
// a * act(a) (the same tensor twice) is the activation squared, not a gate, and is left.

#include "graph/fusion/patterns.h"
#include "graph/ops/gated_mlp_ops.h"

namespace memplan {
namespace {

// Whether `node` has the attribute `name` and its value satisfies `holds`.
bool AttributeHolds(const onnx::NodeProto& node, const std::string& name,
                    bool (*holds)(const onnx::AttributeProto&)) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return holds(a);
  return false;
}

// Mul(act, b) with `act` the activation node at `act_node`: the fused op reads act's input and b.
std::optional<FusionMatch> MatchGatedProduct(const ProtoIndex& index, int act_node,
                                             const char* op_type, const char* domain) {
  const auto& act = index.node(act_node);
  const std::string& gate = act.output(0);
  auto mul = SoleConsumerOp(index, gate, "Mul", 2);
  if (!mul) return std::nullopt;
  const std::optional<std::string> up = OtherOperand(index.node(*mul), gate);
  if (!up || *up == gate || *up == act.input(0)) return std::nullopt;
  FusionMatch m;
  m.nodes = {act_node, *mul};
  m.last = *mul;
  m.fused = FusedNode(op_type, domain, {act.input(0), *up}, index.node(*mul).output(0));
  return m;
}

}  // namespace

std::optional<FusionMatch> MatchSwiGlu(const ProtoIndex& index, int swish_node) {
  const auto& swish = index.node(swish_node);
  if (!IsOp(swish, "Swish", 1)) return std::nullopt;
  // Swish's alpha defaults to 1 (SiLU); any other slope is not Liger's silu.
  if (AttributeHolds(swish, "alpha", [](const onnx::AttributeProto& a) { return a.f() != 1.0f; }))
    return std::nullopt;
  return MatchGatedProduct(index, swish_node, swiglu::kOpType, swiglu::kDomain);
}

std::optional<FusionMatch> MatchGeGlu(const ProtoIndex& index, int gelu_node) {
  const auto& gelu = index.node(gelu_node);
  if (!IsOp(gelu, "Gelu", 1)) return std::nullopt;
  if (!AttributeHolds(gelu, "approximate",
                      [](const onnx::AttributeProto& a) { return a.s() == "tanh"; }))
    return std::nullopt;
  return MatchGatedProduct(index, gelu_node, geglu::kOpType, geglu::kDomain);
}

}  // namespace memplan
