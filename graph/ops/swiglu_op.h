#pragma once
// Liger Kernel's SwiGLU (LigerSiLUMulFunction, liger_kernel/ops/swiglu.py) as one op:
// memplan:SwiGlu(a, b) = silu(a) * b, a the gate projection and b the up projection of a
// LLaMA-style MLP. Eager PyTorch runs F.silu(a) * b as two autograd nodes: silu keeps a, the Mul
// keeps silu(a) and b. Liger's function saves a and b only (ctx.save_for_backward(a, b)) and
// recomputes silu(a) in backward: one [tokens, intermediate] tensor less per MLP. The import fusion
// (graph/fusion/swiglu.cc, under --fusions liger only) writes it; the registry
// (graph/ops/elementwise_ops.cc) and the CPU kernel (runtime/cpu/kernels/swiglu.cc) read one node.

namespace memplan::swiglu {

inline constexpr const char* kDomain = "memplan";
inline constexpr const char* kOpType = "SwiGlu";

}  // namespace memplan::swiglu
