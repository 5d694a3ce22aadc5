#pragma once
// Liger Kernel's gated MLP products as one op each: the activation of the gate projection a times
// the up projection b.
//   memplan:SwiGlu(a, b) = silu(a) * b            (LigerSiLUMulFunction,
//   liger_kernel/ops/swiglu.py:
//                                                   Llama, Mistral, Qwen2, Phi-3's MLP)
//   memplan:GeGlu(a, b)  = gelu_tanh(a) * b       (LigerGELUMulFunction, liger_kernel/ops/geglu.py:
//                                                   Gemma's MLP, gelu_pytorch_tanh only)
// Eager PyTorch runs act(a) * b as two autograd nodes: the activation keeps a, the Mul keeps act(a)
// and b. Liger's functions save a and b only (ctx.save_for_backward(a, b)) and recompute act(a) in
// backward: one [tokens, intermediate] tensor less per MLP. The import fusion
// (graph/fusion/gated_mlp.cc, under --fusions liger only) writes them; the registry
// (graph/ops/elementwise_ops.cc) and the CPU kernels (runtime/cpu/kernels/gated_mlp.cc) read one
// node.

namespace memplan {

namespace swiglu {
inline constexpr const char* kDomain = "memplan";
inline constexpr const char* kOpType = "SwiGlu";
}  // namespace swiglu

namespace geglu {
inline constexpr const char* kDomain = "memplan";
inline constexpr const char* kOpType = "GeGlu";
}  // namespace geglu

}  // namespace memplan
