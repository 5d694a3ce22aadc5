#include "runtime/cpu/kernel_registry.h"

#include <algorithm>

#include "graph/ops/op_registry.h"
#include "runtime/cpu/kernels/kernel_families.h"

namespace memplan {

const KernelRegistry& KernelRegistry::Get() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    RegisterUnaryKernels(r);
    RegisterBinaryKernels(r);
    RegisterMatMulKernels(r);
    RegisterEinsumKernels(r);
    RegisterConvKernels(r);
    RegisterPoolingKernels(r);
    RegisterBatchNormKernels(r);
    RegisterRowNormKernels(r);
    RegisterGroupNormKernels(r);
    RegisterSoftmaxKernels(r);
    RegisterReductionKernels(r);
    RegisterGatherKernels(r);
    RegisterShapeKernels(r);
    RegisterDropoutKernels(r);
    RegisterMaskingKernels(r);
    RegisterRangeKernels(r);
    RegisterNonZeroKernels(r);
    RegisterLogicKernels(r);
    RegisterPaddingKernels(r);
    RegisterResizeKernels(r);
    RegisterRecurrentKernels(r);
    RegisterSdpaKernels(r);
    RegisterRotaryKernels(r);
    RegisterFusedLossKernels(r);
    RegisterGluKernels(r);
    RegisterGatedMlpKernels(r);
    return r;
  }();
  return registry;
}

void KernelRegistry::Register(std::string_view op_type, ForwardKernel forward,
                              BackwardKernel backward, std::string_view domain) {
  MEMPLAN_CHECK(forward != nullptr);
  const OpSchema* op = OpRegistry::Get().Find(op_type, domain);
  MEMPLAN_CHECK(op != nullptr);  // a kernel for an op the registry does not know
  const bool inserted = entries_.emplace(op, KernelEntry{forward, backward}).second;
  MEMPLAN_CHECK(inserted);
}

const KernelEntry* KernelRegistry::Find(const OpSchema& op) const {
  auto it = entries_.find(&op);
  return it == entries_.end() ? nullptr : &it->second;
}

const KernelEntry* KernelRegistry::Find(std::string_view op_type, std::string_view domain) const {
  const OpSchema* op = OpRegistry::Get().Find(op_type, domain);
  return op == nullptr ? nullptr : Find(*op);
}

std::vector<const OpSchema*> KernelRegistry::Ops() const {
  std::vector<const OpSchema*> ops;
  for (const auto& [op, entry] : entries_) ops.push_back(op);
  std::sort(ops.begin(), ops.end(),
            [](const OpSchema* a, const OpSchema* b) { return a->op_type < b->op_type; });
  return ops;
}

std::vector<std::string> KernelRegistry::OpTypes() const {
  std::vector<std::string> types;
  for (const OpSchema* op : Ops()) types.push_back(op->op_type);
  return types;
}

Expected<ForwardResult> RunForward(std::string_view op_type, const KernelContext& ctx,
                                   const ForwardArgs& args, std::string_view domain) {
  const KernelEntry* entry = KernelRegistry::Get().Find(op_type, domain);
  if (entry == nullptr) {
    return MakeError("no CPU kernel for op type '" + std::string(op_type) + "'");
  }
  return entry->forward(ctx, args);
}

Expected<InputGradients> RunBackward(std::string_view op_type, const KernelContext& ctx,
                                     const BackwardArgs& args, std::string_view domain) {
  const KernelEntry* entry = KernelRegistry::Get().Find(op_type, domain);
  if (entry == nullptr || entry->backward == nullptr) {
    return MakeError("no CPU backward kernel for op type '" + std::string(op_type) + "'");
  }
  return entry->backward(ctx, args);
}

}  // namespace memplan
