#pragma once
// torch.rsqrt as one op: memplan:Rsqrt(x) -> 1 / sqrt(x). ONNX has no Rsqrt; torch.onnx writes
// Div(ones(1), Sqrt(x)), and the import fusion (graph/fusion/rsqrt.cc) writes it back, so the
// registry (graph/ops/elementwise_ops.cc) and the CPU kernel (runtime/cpu/kernels/unary.cc) read
// one node. The output has the Div's shape: x's, raised to rank `broadcast_rank` (0 or 1: the
// rank of the ones it divided) where x has a lower rank.
//
// This header names the op and its attribute once for all three.

namespace memplan::rsqrt {

inline constexpr const char* kDomain = "memplan";
inline constexpr const char* kOpType = "Rsqrt";
inline constexpr const char* kBroadcastRank = "broadcast_rank";  // int [0]

}  // namespace memplan::rsqrt
