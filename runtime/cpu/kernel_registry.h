#pragma once
// The CPU kernels of the op registry's entries. The op's facts (shapes, saved tensors, which
// inputs get gradients) live in graph/ops; this table only says how to compute. A kernel is
// registered against its registry entry (an op type the registry does not know cannot have a
// kernel), so tests can list every registry op that has none (tests/runtime/
// kernel_coverage_test.cc).

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "graph/ops/op_schema.h"
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

  // Registers the kernels of the registry entry of `op_type` (ai.onnx domain unless `domain`
  // names another, e.g. memplan's fused attention). REQUIRES: the op registry has that entry, and
  // it has no kernel yet.
  void Register(std::string_view op_type, ForwardKernel forward, BackwardKernel backward,
                std::string_view domain = "");
  // nullptr when the entry has no kernel.
  const KernelEntry* Find(const OpSchema& op) const;
  // Find() of the registry entry of `op_type` (ai.onnx unless `domain` is given); nullptr when
  // there is none.
  const KernelEntry* Find(std::string_view op_type, std::string_view domain = "") const;
  // The registry entries that have kernels, sorted by op type.
  std::vector<const OpSchema*> Ops() const;
  std::vector<std::string> OpTypes() const;

 private:
  std::map<const OpSchema*, KernelEntry> entries_;
};

// Convenience wrappers that look the op up and report a missing kernel as an error.
Expected<ForwardResult> RunForward(std::string_view op_type, const KernelContext& ctx,
                                   const ForwardArgs& args, std::string_view domain = "");
Expected<InputGradients> RunBackward(std::string_view op_type, const KernelContext& ctx,
                                     const BackwardArgs& args, std::string_view domain = "");

}  // namespace memplan
