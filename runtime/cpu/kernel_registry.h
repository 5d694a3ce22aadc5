#pragma once
// ONNX op type -> CPU forward/backward kernels. The op's facts (shapes, saved tensors, which
// inputs get gradients) live in graph/ops; this table only says how to compute.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/cpu/kernel_api.h"

namespace memplan {

struct KernelEntry {
  ForwardKernel forward = nullptr;
  BackwardKernel backward = nullptr;  // null for ops with no differentiable input
};

class KernelRegistry {
 public:
  // The process-wide registry with every built-in kernel family registered.
  static const KernelRegistry& Get();

  // REQUIRES: op_type not registered yet.
  void Register(std::string op_type, ForwardKernel forward, BackwardKernel backward);
  // nullptr when no kernel exists for the op type (ai.onnx domain).
  const KernelEntry* Find(std::string_view op_type) const;
  std::vector<std::string> OpTypes() const;

 private:
  std::map<std::string, KernelEntry, std::less<>> entries_;
};

// Convenience wrappers that look the op up and report a missing kernel as an error.
Expected<ForwardResult> RunForward(std::string_view op_type, const KernelContext& ctx,
                                   const ForwardArgs& args);
Expected<InputGradients> RunBackward(std::string_view op_type, const KernelContext& ctx,
                                     const BackwardArgs& args);

}  // namespace memplan
