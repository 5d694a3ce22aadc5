#pragma once
// Fuses the exact-GELU subgraph that exporters emit below opset 20 back into one Gelu node.
//
// torch.onnx (nn.GELU, F.gelu) and our zoo write  y = (x * (1 + erf(x / sqrt(2)))) * 0.5  as five
// nodes: Div, Erf, Add, Mul, Mul. Autograd saves one tensor for F.gelu (its input, see
// docs/saved_for_backward.md), but the unfused chain saves the input of every node that needs it
// (Div's output for Erf, Erf+1 for the Mul): two extra activation-sized tensors per MLP, about
// 30% of a transformer's saved bytes. Training frameworks run the fused kernel, so memplan plans
// for it. The fused node is com.microsoft's Gelu (the op name the ONNX Runtime contrib domain and
// opset 20 both use), which the op registry knows; its name is the pattern's scope plus "/Gelu".
//
// Matched variants: x/c or x*(1/c) with c = sqrt(2); 1+erf in either operand order; the 0.5 applied
// last (to x*(1+erf)) or first (to x). Every intermediate must feed only the next node of the
// pattern and not be a graph output; anything else is left as it is.

#include <onnx/onnx_pb.h>

namespace memplan {

// Rewrites `model` in place; returns the number of Gelu nodes formed. Constant nodes that only fed
// a fused pattern are removed; com.microsoft is added to the opset imports when a fusion happens.
int FuseErfGelu(onnx::ModelProto& model);

}  // namespace memplan
