#pragma once
// F.glu(x, dim) as one op: memplan:Glu(x) = a * sigmoid(b), where a, b are the two halves of x
// along `axis`. ONNX has no GLU; torch.onnx writes Split(x, 2), Sigmoid(b), Mul(a, .), which read
// node by node keeps sigmoid(b) (Sigmoid's result, and the Mul's operand) beside the halves
// (views of x): one half-size tensor more than torch's glu_backward(grad, self, dim), which keeps
// self only. The import fusion (graph/fusion/glu.cc) writes it back; the registry
// (graph/ops/elementwise_ops.cc) and the CPU kernel (runtime/cpu/kernels/glu.cc) read one node.

namespace memplan::glu {

inline constexpr const char* kDomain = "memplan";
inline constexpr const char* kOpType = "Glu";
inline constexpr const char* kAxis = "axis";  // int, default -1 (F.glu's dim)

}  // namespace memplan::glu
