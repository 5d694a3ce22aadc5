#include "runtime/cpu/kernel_registry.h"

#include "runtime/cpu/kernels/kernel_families.h"

namespace memplan {

const KernelRegistry& KernelRegistry::Get() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    RegisterUnaryKernels(r);
    RegisterBinaryKernels(r);
    RegisterMatMulKernels(r);
    RegisterConvKernels(r);
    RegisterPoolingKernels(r);
    RegisterNormalizationKernels(r);
    RegisterSoftmaxKernels(r);
    RegisterReductionKernels(r);
    RegisterGatherKernels(r);
    RegisterShapeKernels(r);
    RegisterDropoutKernels(r);
    return r;
  }();
  return registry;
}

void KernelRegistry::Register(std::string op_type, ForwardKernel forward, BackwardKernel backward) {
  MEMPLAN_CHECK(forward != nullptr);
  const bool inserted = entries_.emplace(std::move(op_type), KernelEntry{forward, backward}).second;
  MEMPLAN_CHECK(inserted);
}

const KernelEntry* KernelRegistry::Find(std::string_view op_type) const {
  auto it = entries_.find(op_type);
  return it == entries_.end() ? nullptr : &it->second;
}

std::vector<std::string> KernelRegistry::OpTypes() const {
  std::vector<std::string> types;
  for (const auto& [type, entry] : entries_) types.push_back(type);
  return types;
}

Expected<ForwardResult> RunForward(std::string_view op_type, const KernelContext& ctx,
                                   const ForwardArgs& args) {
  const KernelEntry* entry = KernelRegistry::Get().Find(op_type);
  if (entry == nullptr) {
    return MakeError("no CPU kernel for op type '" + std::string(op_type) + "'");
  }
  return entry->forward(ctx, args);
}

Expected<InputGradients> RunBackward(std::string_view op_type, const KernelContext& ctx,
                                     const BackwardArgs& args) {
  const KernelEntry* entry = KernelRegistry::Get().Find(op_type);
  if (entry == nullptr || entry->backward == nullptr) {
    return MakeError("no CPU backward kernel for op type '" + std::string(op_type) + "'");
  }
  return entry->backward(ctx, args);
}

}  // namespace memplan
