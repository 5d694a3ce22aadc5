// Every op of the registry (graph/ops) has a CPU kernel, or is declared below with the reason it
// is not executed as a kernel on the CPU backend. A new registry op without a kernel fails this
// test until someone writes the kernel or declares the gap; a declared op that gains a kernel
// fails it too, so the list stays true.

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "graph/ops/op_registry.h"
#include "runtime/cpu/kernel_registry.h"
#include "tests/runtime/backend_op_coverage.h"

namespace memplan {
namespace {

// Ops in the default domain the CPU backend does not run as a kernel, with the reason. Ops of
// other domains are memplan's losses (the backend's loss path) or run as the default-domain op
// of the same type (graph/ops/standard_aliases.h).
const std::map<std::string, std::string>& NotExecutableOnCpu() {
  static const std::map<std::string, std::string> gaps = {
      // Materialised by the executor from constants (runtime/executor.cc, ConstantTensor); never
      // a step of the program.
      {"Constant", "materialised from its attribute by the executor"},
      {"ConstantOfShape", "materialised from its constant shape input by the executor"},
      {"Range", "materialised from its constant scalar inputs by the executor"},
      // Shape arithmetic: the importer knows the output (Value::contents), so the executor
      // materialises it as a constant.
      {"Shape", "output known at import (contents), materialised as a constant"},
      {"Size", "output known at import (contents), materialised as a constant"},
      // The loss the program appends (analyzer/loss_spec.h) runs on the backend's loss path
      // (Backend::LossForward), like memplan's MseLoss and SumLoss.
      {"SoftmaxCrossEntropyLoss", "computed by the backend's loss path"},
      // Analysed (shapes, cost, saved tensors) but not executable yet: `verify` reports a model
      // that uses one of them as unsupported on the CPU backend.
      {"NonZero", "no CPU kernel yet"},
      // Opset-23 and ONNX Runtime transformer ops: planned from the registry, not executable yet.
      {"Attention",
       "no CPU kernel of its own: runs where the importer fuses it into "
       "memplan's sdpa node (--attention auto or sdpa)"},
  };
  return gaps;
}

TEST_CASE("every registry op has a CPU kernel or a declared reason", "[kernels]") {
  testing::CheckEveryOpImplementedOrDeclared(
      NotExecutableOnCpu(),
      [](const OpSchema& op) { return KernelRegistry::Get().Find(op) != nullptr; }, "a CPU kernel");
}

TEST_CASE("CPU kernels are keyed by registry entries", "[kernels]") {
  const OpSchema* conv = OpRegistry::Get().Find("Conv");
  REQUIRE(conv != nullptr);
  const KernelEntry* by_entry = KernelRegistry::Get().Find(*conv);
  REQUIRE(by_entry != nullptr);
  CHECK(KernelRegistry::Get().Find("Conv") == by_entry);
  // Every kernel's op is the registry's own entry (in its domain: memplan's fused attention has
  // one), in op-type order.
  std::vector<std::string> types;
  for (const OpSchema* op : KernelRegistry::Get().Ops()) {
    CHECK(OpRegistry::Get().Find(op->op_type, op->domain) == op);
    types.push_back(op->op_type);
  }
  CHECK(types == KernelRegistry::Get().OpTypes());
  CHECK(KernelRegistry::Get().Find("NoSuchOp") == nullptr);
}

}  // namespace
}  // namespace memplan
