// Every op of the registry (graph/ops) has a CPU kernel, or is declared below with the reason it
// is not executed as a kernel on the CPU backend. A new registry op without a kernel fails this
// test until someone writes the kernel or declares the gap; a declared op that gains a kernel
// fails it too, so the list stays true.

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "graph/ops/op_registry.h"
#include "graph/ops/standard_aliases.h"
#include "runtime/cpu/kernel_registry.h"
#include "tests/runtime/backend_op_coverage.h"

namespace memplan {
namespace {

// Ops in the default domain the CPU backend does not run as a kernel, with the reason. Ops of
// other domains are declared in OtherDomainsNotExecutableOnCpu.
const std::map<std::string, std::string>& NotExecutableOnCpu() {
  static const std::map<std::string, std::string> gaps = testing::WithOpsNoBackendRuns({
      // Shape arithmetic: the importer knows the output (Value::contents), so the executor
      // materialises it as a constant (the CUDA backend has an op of its own).
      {"Shape", "output known at import (contents), materialised as a constant"},
      // Opset-23 and ONNX Runtime transformer ops: planned from the registry, not executable yet.
      {"Attention",
       "no CPU kernel of its own: runs where the importer fuses it into "
       "memplan's sdpa node (--attention auto or sdpa)"},
  });
  return gaps;
}

TEST_CASE("every registry op has a CPU kernel or a declared reason", "[kernels]") {
  testing::CheckEveryOpImplementedOrDeclared(
      NotExecutableOnCpu(),
      [](const OpSchema& op) { return KernelRegistry::Get().Find(op) != nullptr; }, "a CPU kernel");
}

// Ops of other domains (ONNX Runtime's com.microsoft contrib ops, memplan's own), "domain:op",
// that have no CPU kernel of their own and do not run as the default-domain op of their type
// (graph/ops/standard_aliases.h), with the reason.
const std::map<std::string, std::string>& OtherDomainsNotExecutableOnCpu() {
  static const std::map<std::string, std::string> gaps = {
      // The loss the program appends runs on the backend's loss path (Backend::LossForward).
      {"memplan:MseLoss", "computed by the backend's loss path"},
      {"memplan:SumLoss", "computed by the backend's loss path"},
      // ONNX Runtime's transformer ops: planned from the registry, not executable yet.
      {"com.microsoft:GroupQueryAttention", "no CPU kernel yet"},
      {"com.microsoft:MultiHeadAttention", "no CPU kernel yet"},
  };
  return gaps;
}

TEST_CASE("every registry op of another domain has a CPU kernel or a declared reason",
          "[kernels]") {
  const std::map<std::string, std::string>& declared = OtherDomainsNotExecutableOnCpu();
  std::vector<std::string> undeclared, stale;
  for (const OpSchema* op : OpRegistry::Get().Schemas()) {
    if (op->domain.empty()) continue;
    const std::string key = op->domain + ":" + op->op_type;
    const bool has = KernelRegistry::Get().Find(*op) != nullptr ||
                     (RunsAsStandardOnnxOp(op->domain, op->op_type) &&
                      KernelRegistry::Get().Find(op->op_type) != nullptr);
    const bool is_declared = declared.count(key) > 0;
    if (!has && !is_declared) undeclared.push_back(key);
    if (has && is_declared) stale.push_back(key);
  }
  INFO("registry ops without a CPU kernel and not declared: "
       << Catch::Detail::stringify(undeclared));
  CHECK(undeclared.empty());
  INFO("declared as not executable but have a CPU kernel: " << Catch::Detail::stringify(stale));
  CHECK(stale.empty());
  for (const auto& [key, why] : declared) {
    INFO(key << ": " << why);
    const size_t colon = key.find(':');
    REQUIRE(colon != std::string::npos);
    CHECK(OpRegistry::Get().Find(key.substr(colon + 1), key.substr(0, colon)) != nullptr);
  }
  // ONNX Runtime's RotaryEmbedding has its own kernel: its inputs are in another order.
  const KernelEntry* contrib_rotary =
      KernelRegistry::Get().Find("RotaryEmbedding", "com.microsoft");
  CHECK(contrib_rotary != nullptr);
  CHECK(contrib_rotary != KernelRegistry::Get().Find("RotaryEmbedding"));
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
